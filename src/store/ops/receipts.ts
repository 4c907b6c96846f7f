import type { Db } from '../store.js';

export async function findReceipt(
  db: Db,
  agentId: string,
  messageId: string,
): Promise<{ archived_at: string } | undefined> {
  return db
    .selectFrom('receipts')
    .select('archived_at')
    .where('agent_id', '=', agentId)
    .where('message_id', '=', messageId)
    .executeTakeFirst();
}

/** Inserts a receipt unless one exists; returns true when this call created it. */
export async function insertReceipt(
  db: Db,
  agentId: string,
  messageId: string,
  at: string,
): Promise<boolean> {
  const result = await db
    .insertInto('receipts')
    .values({ agent_id: agentId, message_id: messageId, archived_at: at })
    .onConflict((oc) => oc.columns(['agent_id', 'message_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}
