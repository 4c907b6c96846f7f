import type { Selectable } from 'kysely';
import type { PrincipalsTable, TokensTable } from '../schema.js';
import type { Db } from '../store.js';

export type TokenRow = Selectable<TokensTable>;

export async function insertToken(db: Db, row: TokenRow): Promise<void> {
  await db.insertInto('tokens').values(row).execute();
}

/** The token with this hash and its principal, expired or not (the caller decides). */
export async function findTokenByHash(
  db: Db,
  tokenHash: string,
): Promise<{ token: TokenRow; principal: Selectable<PrincipalsTable> } | undefined> {
  const row = await db
    .selectFrom('tokens')
    .innerJoin('principals', 'principals.id', 'tokens.principal_id')
    .select([
      'tokens.id as token_id',
      'tokens.token_hash',
      'tokens.principal_id',
      'tokens.created_at as token_created_at',
      'tokens.expires_at',
      'tokens.last_used_at',
      'principals.id',
      'principals.name',
      'principals.kind',
      'principals.settlement',
      'principals.created_at',
    ])
    .where('tokens.token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    token: {
      id: row.token_id,
      token_hash: row.token_hash,
      principal_id: row.principal_id,
      created_at: row.token_created_at,
      expires_at: row.expires_at,
      last_used_at: row.last_used_at,
    },
    principal: {
      id: row.id,
      name: row.name,
      kind: row.kind,
      settlement: row.settlement,
      created_at: row.created_at,
    },
  };
}

/**
 * Records a use, at most once per `staleBefore` window, so authenticating a busy device is not a
 * write per request.
 */
export async function touchToken(db: Db, id: string, now: string, staleBefore: string): Promise<void> {
  await db
    .updateTable('tokens')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', staleBefore)]))
    .execute();
}

export interface TokenListing {
  id: string;
  principal: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

/** Every access token (never its hash), oldest first. */
export async function listTokens(db: Db): Promise<TokenListing[]> {
  return db
    .selectFrom('tokens')
    .innerJoin('principals', 'principals.id', 'tokens.principal_id')
    .select([
      'tokens.id',
      'principals.name as principal',
      'tokens.created_at',
      'tokens.expires_at',
      'tokens.last_used_at',
    ])
    .orderBy('tokens.created_at')
    .orderBy('tokens.id')
    .execute();
}

/** Removes one token; true when it existed. */
export async function deleteToken(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('tokens').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
