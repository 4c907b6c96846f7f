import { sha256Hex } from '../../core/fragment.js';
import { cutUtf8 } from '../../core/preview.js';
import {
  findCarriedAttempts,
  findFirstReplies,
  findOpenTurnHolds,
  findRecipientEntries,
  type OpenTurnHoldRow,
  type RecipientEntryRow,
} from '../../store/ops/message-status.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import type { MessageStatus, RecipientState, RecipientStatus } from './message-status-types.js';
import { getMessageRow, loadProjections } from './messages.js';
import { projectionText } from './projection.js';

export type { MessageStatus, RecipientState, RecipientStatus } from './message-status-types.js';

/** Every state, in the order a message usually passes through them. */
export const RECIPIENT_STATES: readonly RecipientState[] = [
  'stored',
  'offered',
  'received',
  'handled',
  'answered',
  'archived',
  'withdrawn',
  'returned',
];

/** Rows one status reply carries at most (a group's agents; the count tells the rest). */
export const MAX_RECIPIENTS = 100;
/** A returned reason is cut to this many UTF-8 bytes (client error text can be long). */
const REASON_BYTES = 500;

/**
 * The status of message `messageId` for every agent it was addressed to. Who may: any current
 * member of the message's channel (the author included while a member); anyone else gets
 * `not_member`, an unknown or deleted id `not_found` (getMessageRow). Nothing is written.
 *
 * `since`: for stored, handled, archived, withdrawn and returned, the inbox entry's last change;
 * for offered and received, the start of the open turn that holds it (or the last delivery that
 * carried it); for answered, the reply's time. A returned row's free-text reason is shown to
 * persons and to that agent itself; another agent sees only the failure kind (a short word).
 */
export async function readMessageStatus(
  ctx: HostContext,
  caller: Principal,
  messageId: string,
): Promise<MessageStatus> {
  const db = ctx.store.db;
  const row = await getMessageRow(ctx, caller, messageId);
  const seq = Number(row.seq);
  const entries = await findRecipientEntries(db, seq);
  const shown = entries.slice(0, MAX_RECIPIENTS);
  const agentIds = shown.map((e) => e.agent_id);
  const [holds, carried, replies, projections] = await Promise.all([
    findOpenTurnHolds(db, agentIds, seq),
    findCarriedAttempts(db, agentIds, seq),
    findFirstReplies(db, row.id, agentIds),
    loadProjections(db, [row]),
  ]);
  // Coverage of an older revision does not count (an edit after the read): settlement agrees.
  const currentSha = sha256Hex(projectionText(projections[0]!));
  const holdOf = new Map(holds.map((h) => [h.agent_id, h]));
  const carriedAt = new Map(carried.map((c) => [c.agent_id, c.updated_at]));
  const replyOf = new Map(replies.map((r) => [r.author_id, r]));
  return {
    messageId: row.id,
    channelId: row.channel_id,
    recipients: shown.map((entry) =>
      recipientStatus(entry, {
        hold: holdOf.get(entry.agent_id),
        carriedAt: carriedAt.get(entry.agent_id),
        reply: replyOf.get(entry.agent_id),
        currentSha,
        fullReason: caller.kind === 'person' || caller.id === entry.agent_id,
      }),
    ),
    recipientCount: entries.length,
  };
}

interface Evidence {
  hold: OpenTurnHoldRow | undefined;
  carriedAt: string | undefined;
  reply: { created_at: string; id: string } | undefined;
  currentSha: string;
  fullReason: boolean;
}

/** Pure: one entry's state from its evidence. A person's action (withdraw) and a failure come first. */
export function recipientStatus(entry: RecipientEntryRow, ev: Evidence): RecipientStatus {
  const base = { agent: entry.name, reason: null };
  if (entry.state === 'withdrawn') return { ...base, state: 'withdrawn', since: entry.updated_at };
  if (entry.state === 'returned')
    return {
      ...base,
      state: 'returned',
      since: entry.updated_at,
      reason: returnedReason(entry, ev.fullReason),
    };
  if (ev.reply) return { ...base, state: 'answered', since: ev.reply.created_at, replyId: ev.reply.id };
  if (entry.state === 'handled' || entry.state === 'archived')
    return { ...base, state: entry.state, since: entry.updated_at };
  const hold = ev.hold;
  if (hold && hold.complete === 1 && hold.sha256 === ev.currentSha)
    return { ...base, state: 'received', since: hold.started_at };
  if (hold && (hold.offered || hold.complete !== null))
    return { ...base, state: 'offered', since: hold.started_at };
  if (ev.carriedAt !== undefined) return { ...base, state: 'offered', since: ev.carriedAt };
  return { ...base, state: 'stored', since: entry.updated_at };
}

function returnedReason(entry: RecipientEntryRow, full: boolean): string | null {
  const kind = entry.failure_kind;
  const text = full ? entry.returned_reason : null;
  const joined = kind && text ? `${kind}: ${text}` : (kind ?? text);
  if (joined === null) return null;
  const cut = cutUtf8(joined, REASON_BYTES);
  return cut.truncated ? `${cut.text}…` : cut.text;
}
