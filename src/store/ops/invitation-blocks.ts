import type { Db } from '../store.js';

/** Records that `principalId` refuses invitations from `blockedId`; false when it already did. */
export async function insertInvitationBlock(
  db: Db,
  row: { principal_id: string; blocked_id: string; created_at: string },
): Promise<boolean> {
  const result = await db
    .insertInto('invitation_blocks')
    .values(row)
    .onConflict((oc) => oc.columns(['principal_id', 'blocked_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Lifts a block; false when there was none. */
export async function deleteInvitationBlock(
  db: Db,
  principalId: string,
  blockedId: string,
): Promise<boolean> {
  const result = await db
    .deleteFrom('invitation_blocks')
    .where('principal_id', '=', principalId)
    .where('blocked_id', '=', blockedId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Whether `principalId` refuses invitations from `inviterId` (a primary-key probe). */
export async function blocksInvitationsFrom(
  db: Db,
  principalId: string,
  inviterId: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('invitation_blocks')
    .select('blocked_id')
    .where('principal_id', '=', principalId)
    .where('blocked_id', '=', inviterId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Who a principal blocks, by name, with when (bounded: a person blocks at most the principals there are). */
export async function listInvitationBlocks(
  db: Db,
  principalId: string,
  limit: number,
): Promise<{ name: string; kind: 'person' | 'agent'; created_at: string }[]> {
  return db
    .selectFrom('invitation_blocks')
    .innerJoin('principals', 'principals.id', 'invitation_blocks.blocked_id')
    .select([
      'principals.name as name',
      'principals.kind as kind',
      'invitation_blocks.created_at as created_at',
    ])
    .where('invitation_blocks.principal_id', '=', principalId)
    .orderBy('principals.name')
    .limit(limit)
    .execute();
}
