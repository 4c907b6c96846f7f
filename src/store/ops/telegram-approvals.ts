import type { Selectable } from 'kysely';
import type { TelegramApprovalsTable, TelegramLinksTable } from '../schema.js';
import type { Db } from '../store.js';
import type { ApprovalRow } from './approvals.js';

export type TelegramApprovalRow = Selectable<TelegramApprovalsTable>;

/** Every paired Telegram user (one bridge per host: a handful of rows). */
export async function listTelegramLinks(db: Db): Promise<Selectable<TelegramLinksTable>[]> {
  return db.selectFrom('telegram_links').selectAll().orderBy('telegram_user_id').execute();
}

/** Pending requests of any agent, oldest first, at most `limit`. */
export async function listPendingApprovals(db: Db, limit: number): Promise<ApprovalRow[]> {
  return db
    .selectFrom('approvals')
    .selectAll()
    .where('status', '=', 'pending')
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** The chats that already have a card for any of `approvalIds`. */
export async function telegramApprovalCardsOf(
  db: Db,
  approvalIds: readonly string[],
): Promise<TelegramApprovalRow[]> {
  if (approvalIds.length === 0) return [];
  return db
    .selectFrom('telegram_approvals')
    .selectAll()
    .where('approval_id', 'in', [...approvalIds])
    .execute();
}

/** Remembers the card sent to a chat (once: a second record for the same pair changes nothing). */
export async function insertTelegramApprovalCard(
  db: Db,
  row: Omit<TelegramApprovalRow, 'updated_at'>,
): Promise<void> {
  await db
    .insertInto('telegram_approvals')
    .values({ ...row, updated_at: row.created_at })
    .onConflict((oc) => oc.columns(['approval_id', 'chat_id']).doNothing())
    .execute();
}

/** Cards still showing their buttons, oldest first, at most `limit`. */
export async function listOpenTelegramApprovalCards(db: Db, limit: number): Promise<TelegramApprovalRow[]> {
  return db
    .selectFrom('telegram_approvals')
    .selectAll()
    .where('shown', '=', 'pending')
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** Records what a card now shows. */
export async function setTelegramApprovalCardShown(
  db: Db,
  key: { approval_id: string; chat_id: string },
  shown: string,
  at: string,
): Promise<void> {
  await db
    .updateTable('telegram_approvals')
    .set({ shown, updated_at: at })
    .where('approval_id', '=', key.approval_id)
    .where('chat_id', '=', key.chat_id)
    .execute();
}
