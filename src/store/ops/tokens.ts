import type { Selectable } from 'kysely';
import type { PrincipalsTable, TokensTable } from '../schema.js';
import type { Db } from '../store.js';
import {
  deleteCredential,
  findCredentialByHash,
  insertCredential,
  listCredentials,
  TOKENS,
  touchCredential,
} from './credentials.js';

export type TokenRow = Selectable<TokensTable>;

export async function insertToken(db: Db, row: TokenRow): Promise<void> {
  await insertCredential(db, TOKENS, row);
}

/** The token with this hash and its principal, expired or not (the caller decides). */
export async function findTokenByHash(
  db: Db,
  tokenHash: string,
): Promise<{ token: TokenRow; principal: Selectable<PrincipalsTable> } | undefined> {
  const found = await findCredentialByHash(db, TOKENS, tokenHash);
  return found && { token: found.credential, principal: found.principal };
}

/**
 * Records a use, at most once per `staleBefore` window, so authenticating a busy device is not a
 * write per request.
 */
export async function touchToken(db: Db, id: string, now: string, staleBefore: string): Promise<void> {
  await touchCredential(db, TOKENS, id, now, staleBefore);
}

export interface TokenListing {
  id: string;
  principal: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  note: string | null;
}

/** Every access token (never its hash) with its note, oldest first. */
export async function listTokens(db: Db): Promise<TokenListing[]> {
  const rows = await listCredentials(db, TOKENS);
  const notes = new Map(
    (await db.selectFrom('tokens').select(['id', 'note']).where('note', 'is not', null).execute()).map(
      (r) => [r.id, r.note],
    ),
  );
  return rows.map(({ last_used, ...row }) => ({
    ...row,
    last_used_at: last_used,
    note: notes.get(row.id) ?? null,
  }));
}

/** Removes one token; true when it existed. */
export async function deleteToken(db: Db, id: string): Promise<boolean> {
  return deleteCredential(db, TOKENS, id);
}
