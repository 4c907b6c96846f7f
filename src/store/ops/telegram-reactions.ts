import type { Selectable } from 'kysely';
import type { TelegramReactionsTable } from '../schema.js';
import type { Db } from '../store.js';

export type TelegramReactionRow = Selectable<TelegramReactionsTable>;

/** Remembers a person's Telegram message and the Sluice message it became (once: a replay is a no-op). */
export async function insertTelegramReaction(
  db: Db,
  row: Omit<TelegramReactionRow, 'state' | 'updated_at'>,
): Promise<void> {
  await db
    .insertInto('telegram_reactions')
    .values({ ...row, state: null, updated_at: row.created_at })
    .onConflict((oc) => oc.column('message_id').doNothing())
    .execute();
}

/**
 * The newest tracked messages whose shown state may still move (not answered, archived or
 * withdrawn), in `channelIds` when given, newest first, at most `limit`.
 */
export async function listOpenTelegramReactions(
  db: Db,
  channelIds: readonly string[] | null,
  limit: number,
): Promise<TelegramReactionRow[]> {
  if (channelIds !== null && channelIds.length === 0) return [];
  let query = db
    .selectFrom('telegram_reactions')
    .selectAll()
    .where((eb) =>
      eb.or([eb('state', 'is', null), eb('state', 'not in', ['answered', 'archived', 'withdrawn'])]),
    );
  if (channelIds !== null) query = query.where('channel_id', 'in', [...channelIds]);
  return query.orderBy('created_at', 'desc').limit(limit).execute();
}

/** Records the state the chat now shows for a message. */
export async function setTelegramReactionState(
  db: Db,
  messageId: string,
  state: string,
  at: string,
): Promise<void> {
  await db
    .updateTable('telegram_reactions')
    .set({ state, updated_at: at })
    .where('message_id', '=', messageId)
    .execute();
}
