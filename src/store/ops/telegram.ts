import type { Selectable } from 'kysely';
import type { TelegramLinksTable } from '../schema.js';
import type { Db } from '../store.js';

export type TelegramLinkRow = Selectable<TelegramLinksTable>;

export async function insertPairCode(
  db: Db,
  row: { code_hash: string; person_id: string; created_at: string; expires_at: string },
): Promise<void> {
  await db
    .insertInto('telegram_pair_codes')
    .values({ ...row, used_at: null })
    .execute();
}

/** Marks an unused, unexpired code used and returns its person; undefined for any other code. */
export async function takePairCode(db: Db, codeHash: string, now: string): Promise<string | undefined> {
  const row = await db
    .updateTable('telegram_pair_codes')
    .set({ used_at: now })
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('person_id')
    .executeTakeFirst();
  return row?.person_id;
}

/** Pairs a Telegram user (again): a new pairing replaces the old one whole. */
export async function upsertTelegramLink(db: Db, row: TelegramLinkRow): Promise<void> {
  await db
    .insertInto('telegram_links')
    .values(row)
    .onConflict((oc) =>
      oc.column('telegram_user_id').doUpdateSet({
        chat_id: row.chat_id,
        person_id: row.person_id,
        agent_id: row.agent_id,
        paired_at: row.paired_at,
      }),
    )
    .execute();
}

export async function findTelegramLink(db: Db, telegramUserId: string): Promise<TelegramLinkRow | undefined> {
  return db
    .selectFrom('telegram_links')
    .selectAll()
    .where('telegram_user_id', '=', telegramUserId)
    .executeTakeFirst();
}

export async function deleteTelegramLink(db: Db, telegramUserId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('telegram_links')
    .where('telegram_user_id', '=', telegramUserId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function setTelegramLinkAgent(db: Db, telegramUserId: string, agentId: string): Promise<void> {
  await db
    .updateTable('telegram_links')
    .set({ agent_id: agentId })
    .where('telegram_user_id', '=', telegramUserId)
    .execute();
}

/** The paired Telegram users of some persons (a DM can reach several phones of one person). */
export async function telegramLinksOfPersons(
  db: Db,
  personIds: readonly string[],
): Promise<TelegramLinkRow[]> {
  if (personIds.length === 0) return [];
  return db
    .selectFrom('telegram_links')
    .selectAll()
    .where('person_id', 'in', personIds)
    .orderBy('telegram_user_id')
    .execute();
}

/** The parts of a message already sent to a chat. */
export async function sentTelegramParts(db: Db, messageId: string, chatId: string): Promise<Set<number>> {
  const rows = await db
    .selectFrom('telegram_sent')
    .select('part')
    .where('message_id', '=', messageId)
    .where('chat_id', '=', chatId)
    .execute();
  return new Set(rows.map((r) => Number(r.part)));
}

export async function recordTelegramPart(
  db: Db,
  row: { message_id: string; chat_id: string; part: number; sent_at: string },
): Promise<void> {
  await db
    .insertInto('telegram_sent')
    .values(row)
    .onConflict((oc) => oc.columns(['message_id', 'chat_id', 'part']).doNothing())
    .execute();
}
