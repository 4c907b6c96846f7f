import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import { appendEvent } from '../../store/ops/events.js';
import { findMessageById } from '../../store/ops/messages.js';
import { advanceReadMark, listReadMarkRows, listUnreadWalks } from '../../store/ops/read-marks.js';
import type { NewestMessage } from '../../store/ops/sidebar-columns.js';
import type { ChannelKind } from '../../store/schema.js';
import type { Db } from '../../store/store.js';
import { announceCommit, type HostContext, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { requireMember } from './channels.js';

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
  const at = nowIso(ctx);
  // The membership check runs inside the write's transaction, as every guard of a write does.
  const marked = await ctx.store.transaction(async (trx) => {
    const message = typeof messageId === 'string' ? await findMessageById(trx, messageId) : undefined;
    if (!message || message.deleted_at !== null) {
      throw new SluiceError('not_found', `no message ${quoteInput(messageId)}`);
    }
    await requireMember(trx, message.channel_id, actor.id);
    const seq = Number(message.seq);
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
    return { channelId: message.channel_id, lastReadSeq: mark.lastReadSeq };
  });
  announceCommit(ctx);
  return marked;
}

/** The read marks of a channel's members, most advanced first, at most `limit`. */
export async function listReadMarks(db: Db, channelId: string, limit: number): Promise<ReadMark[]> {
  return listReadMarkRows(db, channelId, limit);
}

/** Unread counts stop here: a count of this value means "this many or more". */
export const MAX_UNREAD = 100;

/** Where a channel stands in a principal's sidebar: unread messages and the activity key. */
export interface SidebarPlace {
  unread: number;
  /** The membership's activity seq (migration 017): the sidebar sorts on it, newest first. */
  activity: number;
}

/**
 * How many of a channel's `newest` messages (after the reader's read mark, newest first) the
 * reader has not read: messages by others after the reader's own newest message (writing in a
 * channel means having read it), and after they joined a group.
 */
export function countUnread(
  readerId: string,
  membership: { kind: ChannelKind; joinedAt: string },
  newest: readonly NewestMessage[],
): number {
  let unread = 0;
  for (const message of newest) {
    if (message.authorId === readerId) break;
    // Before joining a group is history, not news (a message in the very millisecond of joining
    // counts as before). Both members of a DM are there from its start, first message included.
    if (membership.kind === 'group' && message.createdAt <= membership.joinedAt) break;
    unread += 1;
  }
  return unread;
}

/**
 * How many messages in each channel the principal has not read ({@link countUnread}), counted up
 * to {@link MAX_UNREAD}. Each channel costs one bounded index walk of at most MAX_UNREAD rows,
 * without bodies, all in one statement. Channels the principal is not in are left out.
 */
export async function sidebarPlaces(
  db: Db,
  principalId: string,
  channelIds: readonly string[],
): Promise<Map<string, SidebarPlace>> {
  const rows = await listUnreadWalks(db, principalId, channelIds, MAX_UNREAD);
  return new Map(
    rows.map(
      (r) => [r.channelId, { unread: countUnread(principalId, r, r.newest), activity: r.activity }] as const,
    ),
  );
}

/** The unread counts of {@link sidebarPlaces}. */
export async function unreadCounts(
  db: Db,
  principalId: string,
  channelIds: readonly string[],
): Promise<Map<string, number>> {
  const places = await sidebarPlaces(db, principalId, channelIds);
  return new Map([...places].map(([id, place]) => [id, place.unread] as const));
}
