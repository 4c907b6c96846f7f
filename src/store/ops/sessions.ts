import type { Selectable } from 'kysely';
import type { LoginLinksTable, PrincipalsTable, SessionsTable } from '../schema.js';
import type { Db } from '../store.js';

export type LoginLinkRow = Selectable<LoginLinksTable>;
export type SessionRow = Selectable<SessionsTable>;

export async function insertLoginLink(db: Db, row: LoginLinkRow): Promise<void> {
  await db.insertInto('login_links').values(row).execute();
}

/** The link with this hash if it is unused and not yet expired at `now`. */
export async function findUsableLoginLink(
  db: Db,
  codeHash: string,
  now: string,
): Promise<LoginLinkRow | undefined> {
  return db
    .selectFrom('login_links')
    .selectAll()
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/**
 * Marks the link used and returns its principal, in one conditional update: of two requests
 * racing with the same link, exactly one gets the principal.
 */
export async function consumeLoginLink(db: Db, codeHash: string, now: string): Promise<string | undefined> {
  const row = await db
    .updateTable('login_links')
    .set({ used_at: now })
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('principal_id')
    .executeTakeFirst();
  return row?.principal_id;
}

/** Drops links that can no longer be used (expired before `before`). */
export async function deleteExpiredLoginLinks(db: Db, before: string): Promise<void> {
  await db.deleteFrom('login_links').where('expires_at', '<', before).execute();
}

export async function insertSession(db: Db, row: SessionRow): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

/** The session with this secret hash and its principal, expired or not (the caller decides). */
export async function findSessionBySecretHash(
  db: Db,
  secretHash: string,
): Promise<{ session: SessionRow; principal: Selectable<PrincipalsTable> } | undefined> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('principals', 'principals.id', 'sessions.principal_id')
    .select([
      'sessions.id as session_id',
      'sessions.secret_hash',
      'sessions.principal_id',
      'sessions.created_at as session_created_at',
      'sessions.expires_at',
      'sessions.last_seen_at',
      'principals.id',
      'principals.name',
      'principals.kind',
      'principals.settlement',
      'principals.created_at',
    ])
    .where('sessions.secret_hash', '=', secretHash)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    session: {
      id: row.session_id,
      secret_hash: row.secret_hash,
      principal_id: row.principal_id,
      created_at: row.session_created_at,
      expires_at: row.expires_at,
      last_seen_at: row.last_seen_at,
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

/** Records activity at most once per `staleBefore` window. */
export async function touchSession(db: Db, id: string, now: string, staleBefore: string): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ last_seen_at: now })
    .where('id', '=', id)
    .where('last_seen_at', '<', staleBefore)
    .execute();
}

export interface SessionListing {
  id: string;
  principal: string;
  created_at: string;
  expires_at: string;
  last_seen_at: string;
}

/** Sessions not expired at `now`, oldest first. */
export async function listSessions(db: Db, now: string): Promise<SessionListing[]> {
  return db
    .selectFrom('sessions')
    .innerJoin('principals', 'principals.id', 'sessions.principal_id')
    .select([
      'sessions.id',
      'principals.name as principal',
      'sessions.created_at',
      'sessions.expires_at',
      'sessions.last_seen_at',
    ])
    .where('sessions.expires_at', '>', now)
    .orderBy('sessions.created_at')
    .orderBy('sessions.id')
    .execute();
}

/** Ends one session; true when it existed. */
export async function deleteSession(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('sessions').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function deleteExpiredSessions(db: Db, before: string): Promise<void> {
  await db.deleteFrom('sessions').where('expires_at', '<', before).execute();
}
