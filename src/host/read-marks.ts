import { SluiceError } from '../core/errors.js';
import { appendEvent } from '../store/ops/events.js';
import { findMessageById } from '../store/ops/messages.js';
import { findActiveMemberships, listNewestAfter } from '../store/ops/presentation.js';
import { advanceReadMark, listReadMarkRows } from '../store/ops/read-marks.js';
import type { Db } from '../store/store.js';
import { requireMember } from './channels.js';
import { announceCommit, type HostContext, nowIso } from './context.js';
import type { Principal } from './principals.js';

/** How far a principal has read a channel: part of the human presentation record only. */
export interface ReadMark {
  principalId: string;
  lastReadSeq: number;
  updatedAt: string;
}

/**
 * Marks a channel read up to and including `messageId` for the actor. Marks only move forward:
 * marking an older message keeps the newer mark. Never touches any inbox (I3).
 */
export async function markRead(
  ctx: HostContext,
  actor: Principal,
  messageId: string,
): Promise<{ channelId: string; lastReadSeq: number }> {
  const message = typeof messageId === 'string' ? await findMessageById(ctx.store.db, messageId) : undefined;
  if (!message || message.deleted_at !== null) {
    throw new SluiceError('not_found', `no message ${JSON.stringify(String(messageId)).slice(0, 80)}`);
  }
  await requireMember(ctx.store.db, message.channel_id, actor.id);
  const at = nowIso(ctx);
  const seq = Number(message.seq);
  const lastReadSeq = await ctx.store.transaction(async (trx) => {
    const mark = await advanceReadMark(trx, {
      channelId: message.channel_id,
      principalId: actor.id,
      seq,
      at,
    });
    // Only a mark that moved is news (the person's other pages update their unread counts).
    if (mark.moved) {
      await appendEvent(trx, {
        kind: 'read.marked',
        agent_id: actor.id,
        channel_id: message.channel_id,
        created_at: at,
      });
    }
    return mark.lastReadSeq;
  });
  announceCommit(ctx);
  return { channelId: message.channel_id, lastReadSeq };
}

/** The read marks of a channel's members, most advanced first, at most `limit`. */
export async function listReadMarks(db: Db, channelId: string, limit: number): Promise<ReadMark[]> {
  return listReadMarkRows(db, channelId, limit);
}

/** Unread counts stop here: a count of this value means "this many or more". */
export const MAX_UNREAD = 100;

/**
 * How many messages in each channel the principal has not read: messages by others after their
 * read mark, after their own newest message (writing in a channel means having read it), and after
 * they joined a group, counted up to {@link MAX_UNREAD}. Each channel costs one bounded index walk of at
 * most MAX_UNREAD rows, without bodies. Channels the principal is not in are left out.
 */
export async function unreadCounts(
  db: Db,
  principalId: string,
  channelIds: readonly string[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const m of await findActiveMemberships(db, principalId, channelIds)) {
    const rows = await listNewestAfter(db, m.channel_id, Number(m.last_read_seq ?? 0), MAX_UNREAD);
    let unread = 0;
    for (const row of rows) {
      if (row.author_id === principalId) break;
      // Before joining a group is history, not news (a message in the very millisecond of joining
      // counts as before). Both members of a DM are there from its start, first message included.
      if (m.kind === 'group' && row.created_at <= m.joined_at) break;
      unread += 1;
    }
    counts.set(m.channel_id, unread);
  }
  return counts;
}
