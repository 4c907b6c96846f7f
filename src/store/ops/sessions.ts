import type { Selectable } from 'kysely';
import type { LoginLinksTable, PrincipalsTable, SessionsTable } from '../schema.js';
import type { Db } from '../store.js';
import {
  deleteCredential,
  findCredentialByHash,
  insertCredential,
  listCredentials,
  SESSIONS,
  touchCredential,
} from './credentials.js';

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
  await insertCredential(db, SESSIONS, row);
}

/** The session with this secret hash and its principal, expired or not (the caller decides). */
export async function findSessionBySecretHash(
  db: Db,
  secretHash: string,
): Promise<{ session: SessionRow; principal: Selectable<PrincipalsTable> } | undefined> {
  const found = await findCredentialByHash(db, SESSIONS, secretHash);
  return found && { session: found.credential, principal: found.principal };
}

/** Records activity at most once per `staleBefore` window. */
export async function touchSession(db: Db, id: string, now: string, staleBefore: string): Promise<void> {
  await touchCredential(db, SESSIONS, id, now, staleBefore);
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
  const rows = await listCredentials(db, SESSIONS, now);
  return rows.map(({ last_used, expires_at, ...row }) => ({
    ...row,
    expires_at: expires_at as string,
    last_seen_at: last_used as string,
  }));
}

/** Ends one session; true when it existed. */
export async function deleteSession(db: Db, id: string): Promise<boolean> {
  return deleteCredential(db, SESSIONS, id);
}

export async function deleteExpiredSessions(db: Db, before: string): Promise<void> {
  await db.deleteFrom('sessions').where('expires_at', '<', before).execute();
}
