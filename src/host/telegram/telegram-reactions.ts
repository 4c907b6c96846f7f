import { isSluiceError } from '../../core/errors.js';
import { lastEventSeq, listEventsAfter } from '../../store/ops/events.js';
import { findPrincipalById } from '../../store/ops/principals.js';
import {
  insertTelegramReaction,
  listOpenTelegramReactions,
  setTelegramReactionState,
  type TelegramReactionRow,
} from '../../store/ops/telegram-reactions.js';
import { type HostContext, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { readMessageStatus } from '../messages/message-status.js';
import type { RecipientStatus } from '../messages/message-status-types.js';

/** Tracked messages one check reads at most (the newest): an old one still open waits its turn. */
const MAX_CHECKED = 100;
/** Events read per step when following the log. */
const EVENT_BATCH = 1000;

/** Kinds of event that can move a message's status: inbox transitions, progress, and replies. */
const STATUS_EVENTS = new Set(['queue.changed', 'message.progress', 'message.created']);

/**
 * Remembers that the person's Telegram message `telegramMessageId` in `chatId` became Sluice
 * message `messageId`, so its status can be shown on it. A replayed update changes nothing.
 */
export async function trackTelegramMessage(
  ctx: HostContext,
  input: {
    messageId: string;
    channelId: string;
    chatId: string;
    telegramMessageId: number;
    person: Principal;
  },
): Promise<void> {
  const at = nowIso(ctx);
  await ctx.store.transaction((trx) =>
    insertTelegramReaction(trx, {
      message_id: input.messageId,
      channel_id: input.channelId,
      chat_id: input.chatId,
      telegram_message_id: input.telegramMessageId,
      person_id: input.person.id,
      created_at: at,
    }),
  );
}

/** A tracked message whose status moved since the chat was last shown it. */
export interface ReactionChange {
  row: TelegramReactionRow;
  /** The DM's agent's row of `message.status`, read as the person who sent it. */
  status: RecipientStatus;
}

/**
 * The tracked messages (in `channelIds`, or all when null) whose status differs from what their
 * chat shows. Read with `message.status` as the sender, so a person sees exactly what the page and
 * the CLI show them. A message that is gone (deleted, or the person left the DM) reads `withdrawn`,
 * which closes it.
 */
export async function reactionChanges(
  ctx: HostContext,
  channelIds: readonly string[] | null,
): Promise<ReactionChange[]> {
  const rows = await listOpenTelegramReactions(ctx.store.db, channelIds, MAX_CHECKED);
  const changes: ReactionChange[] = [];
  for (const row of rows) {
    const person = await findPrincipalById(ctx.store.db, row.person_id);
    let status: RecipientStatus | undefined;
    try {
      if (person) status = (await readMessageStatus(ctx, person, row.message_id)).recipients[0];
    } catch (err) {
      if (!isSluiceError(err) || (err.code !== 'not_found' && err.code !== 'not_member')) throw err;
    }
    status ??= { agent: '', state: 'withdrawn', since: row.updated_at, reason: null };
    if (status.state !== row.state) changes.push({ row, status });
  }
  return changes;
}

/** Records that the chat now shows `state` for the message. */
export async function markReactionShown(ctx: HostContext, messageId: string, state: string): Promise<void> {
  const at = nowIso(ctx);
  await ctx.store.transaction((trx) => setTelegramReactionState(trx, messageId, state, at));
}

/** Where a reaction follower starting now begins in the event log. */
export function reactionCursorStart(ctx: HostContext): Promise<number> {
  return lastEventSeq(ctx.store.db);
}

/** The channels whose messages' status may have moved after event `afterSeq`, and where to resume. */
export async function channelsMovedAfter(
  ctx: HostContext,
  afterSeq: number,
): Promise<{ channelIds: string[]; lastSeq: number }> {
  const channelIds = new Set<string>();
  let seq = afterSeq;
  for (;;) {
    const events = await listEventsAfter(ctx.store.db, seq, EVENT_BATCH);
    for (const e of events) if (STATUS_EVENTS.has(e.kind) && e.channel_id) channelIds.add(e.channel_id);
    const last = events[events.length - 1];
    if (!last) break;
    seq = Number(last.seq);
    if (events.length < EVENT_BATCH) break;
  }
  return { channelIds: [...channelIds], lastSeq: seq };
}
