import type { Selectable } from 'kysely';
import type { IdempotencyKeysTable } from '../schema.js';
import type { Db } from '../store.js';

export type IdempotencyKeyRow = Selectable<IdempotencyKeysTable>;

/** The send a principal already made under `key`, if any. */
export async function findIdempotencyKey(
  db: Db,
  principalId: string,
  key: string,
): Promise<IdempotencyKeyRow | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('principal_id', '=', principalId)
    .where('key', '=', key)
    .executeTakeFirst();
}

/**
 * Records a key with the message it stored, in the message's transaction. Returns false when the
 * key is already taken (a concurrent retry committed first): the caller must roll back.
 */
export async function insertIdempotencyKey(db: Db, row: IdempotencyKeyRow): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['principal_id', 'key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Deletes a principal's keys created before `before` (ISO time); returns how many. */
export async function deleteIdempotencyKeysBefore(
  db: Db,
  principalId: string,
  before: string,
): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where('principal_id', '=', principalId)
    .where('created_at', '<', before)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
