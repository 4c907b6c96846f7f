import { CompiledQuery } from 'kysely';
import type { Db, SentMessageRow } from '../store.js';
import { SLUICE_SEND } from './send-batch.js';

/**
 * The send as one server function call, `sluice_send` (migrations 008, 013, 020), which also takes the
 * shared write lock: the message, one inbox entry per other agent member, their `queue.changed`
 * events and one `message.created`, in one round trip (the search index follows the message row
 * by its expression index). On the send path's batching handle it joins the process's other
 * waiting sends (send-batch.ts). Returns the message's seq, or `undefined` when the author is no
 * current member (nothing stored).
 */
export async function storeAndFanOut(db: Db, m: SentMessageRow): Promise<number | undefined> {
  const result = await db.executeQuery<{ seq: number | string | null }>(
    CompiledQuery.raw(SLUICE_SEND, [
      m.id,
      m.channel_id,
      m.author_id,
      m.created_at,
      m.body,
      m.body_bytes,
      m.subject,
      m.reply_to,
      m.actions,
      m.attachments,
      m.source,
      m.origin,
    ]),
  );
  const seq = result.rows[0]?.seq;
  return seq === null || seq === undefined ? undefined : Number(seq);
}
