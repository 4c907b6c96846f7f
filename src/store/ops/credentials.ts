import type { Kysely, Selectable } from 'kysely';
import { type Precompiled, precompile } from '../precompiled.js';
import type { Database, PrincipalsTable } from '../schema.js';
import type { Db } from '../store.js';

/**
 * Browser sessions and access tokens are the same shape: a stored hash of a secret that names a
 * principal, an expiry, and a column recording the last authenticated use. These queries serve
 * both, parametrised by the table and its two differently named columns.
 */
export interface CredentialTable<T extends 'sessions' | 'tokens'> {
  table: T;
  /** Column holding the secret's hash (the secret itself is never stored). */
  hash: keyof Database[T] & string;
  /** Column recording the last authenticated use. */
  seen: keyof Database[T] & string;
}

export const SESSIONS: CredentialTable<'sessions'> = {
  table: 'sessions',
  hash: 'secret_hash',
  seen: 'last_seen_at',
};
export const TOKENS: CredentialTable<'tokens'> = {
  table: 'tokens',
  hash: 'token_hash',
  seen: 'last_used_at',
};

type AnyCredentialTable = CredentialTable<'sessions'> | CredentialTable<'tokens'>;

export type CredentialRow<T extends 'sessions' | 'tokens'> = Selectable<Database[T]>;
type Principal = Selectable<PrincipalsTable>;

/** Kysely cannot check a query whose table is a type parameter; the callers' row types do instead. */
type LooseDb = Kysely<Record<string, Record<string, string | null>>>;
const loose = (db: Db): LooseDb => db as unknown as LooseDb;

export async function insertCredential<T extends 'sessions' | 'tokens'>(
  db: Db,
  kind: CredentialTable<T>,
  row: CredentialRow<T>,
): Promise<void> {
  await loose(db)
    .insertInto(kind.table)
    .values(row as Record<string, string | null>)
    .execute();
}

/** The credential with this hash and its principal, expired or not (the caller decides). */
type CredentialWithPrincipal = Record<string, string | null> & {
  principal__id: string;
  principal__name: string;
  principal__kind: string;
  principal__settlement: string;
  principal__created_at: string;
};

// Every request authenticates: each table's lookup is built once (precompiled.ts).
const lookups = new Map<string, Precompiled<[string], CredentialWithPrincipal>>();

function byHash(kind: { table: string; hash: string }): Precompiled<[string], CredentialWithPrincipal> {
  let lookup = lookups.get(kind.table);
  if (!lookup) {
    const table: string = kind.table;
    const hashColumn: string = kind.hash;
    lookup = precompile((db: Db, hash: string) =>
      loose(db)
        .selectFrom(table)
        .innerJoin('principals', 'principals.id', `${table}.principal_id`)
        .selectAll(table)
        .select([
          'principals.id as principal__id',
          'principals.name as principal__name',
          'principals.kind as principal__kind',
          'principals.settlement as principal__settlement',
          'principals.created_at as principal__created_at',
        ])
        .where(`${table}.${hashColumn}`, '=', hash),
    ) as Precompiled<[string], CredentialWithPrincipal>;
    lookups.set(kind.table, lookup);
  }
  return lookup;
}

export async function findCredentialByHash<T extends 'sessions' | 'tokens'>(
  db: Db,
  kind: CredentialTable<T>,
  hash: string,
): Promise<{ credential: CredentialRow<T>; principal: Principal } | undefined> {
  const row = await byHash(kind).first(db, hash);
  if (!row) return undefined;
  const {
    principal__id,
    principal__name,
    principal__kind,
    principal__settlement,
    principal__created_at,
    ...credential
  } = row;
  return {
    credential: credential as unknown as CredentialRow<T>,
    principal: {
      id: principal__id,
      name: principal__name,
      kind: principal__kind,
      settlement: principal__settlement,
      created_at: principal__created_at,
    } as Principal,
  };
}

/**
 * Records a use, at most once per `staleBefore` window, so authenticating a busy client is not a
 * write per request. A never-used credential (null, tokens only) is stale.
 */
export async function touchCredential(
  db: Db,
  kind: AnyCredentialTable,
  id: string,
  now: string,
  staleBefore: string,
): Promise<void> {
  const seen: string = kind.seen;
  await loose(db)
    .updateTable(kind.table)
    .set({ [seen]: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb(seen, 'is', null), eb(seen, '<', staleBefore)]))
    .execute();
}

export interface CredentialListing {
  id: string;
  principal: string;
  created_at: string;
  expires_at: string | null;
  last_used: string | null;
}

/** Credentials (never their hashes) with their principal's name, oldest first; only those not expired at `liveAt` when given. */
export async function listCredentials(
  db: Db,
  kind: AnyCredentialTable,
  liveAt?: string,
): Promise<CredentialListing[]> {
  const { table } = kind;
  let query = loose(db)
    .selectFrom(table)
    .innerJoin('principals', 'principals.id', `${table}.principal_id`)
    .select([
      `${table}.id`,
      'principals.name as principal',
      `${table}.created_at`,
      `${table}.expires_at`,
      `${table}.${kind.seen} as last_used`,
    ]);
  if (liveAt !== undefined) query = query.where(`${table}.expires_at`, '>', liveAt);
  const rows = await query.orderBy(`${table}.created_at`).orderBy(`${table}.id`).execute();
  return rows as unknown as CredentialListing[];
}

/** Revokes one credential; true when it existed. */
export async function deleteCredential(db: Db, kind: AnyCredentialTable, id: string): Promise<boolean> {
  const result = await loose(db).deleteFrom(kind.table).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
