import {
  DEFAULT_DELIVERY_LIMITS,
  type DeliveryCandidate,
  type DeliveryLimits,
  type RenderedDelivery,
  renderDelivery,
} from '../../core/envelope.js';
import { sha256Hex } from '../../core/fragment.js';
import type { HostContext } from '../../host/context.js';
import { dispatchAttemptsOf } from '../../host/dispatch-attempts.js';
import { pendingCount, withProjections } from '../../host/inbox.js';
import { materializeAttachment } from '../../host/materialize.js';
import { getMessageRow, loadProjections } from '../../host/messages.js';
import type { Principal } from '../../host/principals.js';
import { type MessageProjection, projectionText } from '../../host/projection.js';
import { isDeliverable } from '../../host/queue.js';
import { listActiveChannelIds } from '../../store/ops/channels.js';
import { insertCoverageOffers } from '../../store/ops/coverage-offers.js';
import { listInboxEntries } from '../../store/ops/inbox.js';
import { findTurn } from '../../store/ops/turns.js';
import { type DeliveredMessage, envelopeMessages } from './delivered.js';
import { isolationThreshold } from './dispatch.js';

/** What a running turn already carries: the budget a steer may still use. */
export interface SteerBudget {
  /** Ids the turn carries (its delivery, then earlier steers), FIFO. */
  carried: readonly string[];
  /** UTF-8 bytes of the envelopes the turn already carries. */
  bytes: number;
}

/**
 * The delivery to steer into a running turn: the pending messages queued behind the ones the turn
 * already carries, within what is left of the turn's limits — or nothing. Nothing when the queue
 * is not deliverable (paused, a returned card blocks), when the carried messages are no longer the
 * queue's head in order (steering would overtake, I7), when the budget is spent, or when a message
 * whose earlier turns did not settle is next (it goes alone, in a turn of its own).
 */
export async function renderSteer(
  ctx: HostContext,
  agent: Principal,
  limits: Partial<DeliveryLimits> | undefined,
  budget: SteerBudget,
  maxAttempts?: number,
): Promise<RenderedDelivery | undefined> {
  const maxMessages = (limits?.maxMessages ?? DEFAULT_DELIVERY_LIMITS.maxMessages) - budget.carried.length;
  const maxBytes = (limits?.maxBytes ?? DEFAULT_DELIVERY_LIMITS.maxBytes) - budget.bytes;
  if (maxMessages < 1 || maxBytes < 1) return undefined;
  if (!(await isDeliverable(ctx.store.db, agent))) return undefined;
  const db = ctx.store.db;
  const channelIds = await listActiveChannelIds(db, agent.id);
  const entries = await listInboxEntries(db, agent.id, {
    channelIds,
    limit: budget.carried.length + maxMessages + 1,
  });
  const carried = new Set(budget.carried);
  // The carried messages that are still pending must lead the queue; the rest queue behind them.
  let start = 0;
  while (start < entries.length && carried.has((entries[start] as { message_id: string }).message_id))
    start++;
  const behind = entries.slice(start);
  if (behind.length === 0 || behind.some((e) => carried.has(e.message_id))) return undefined;
  const candidates: DeliveryCandidate[] = [];
  for (const { projection, channelName } of await withProjections(db, behind)) {
    const attachments = [];
    for (const a of projection.attachments) {
      const path = await materializeAttachment(ctx, agent, a.attachment_id).catch(() => undefined);
      attachments.push(path ? { ...a, path } : a);
    }
    candidates.push({
      id: projection.message_id,
      channel: channelName,
      from: projection.author.name,
      createdAt: projection.created_at,
      subject: projection.subject ?? null,
      replyTo: projection.reply_to?.message_id ?? null,
      body: projection.body,
      attachments,
    });
  }
  const totalPending = Math.max((await pendingCount(db, agent.id)) - start, candidates.length);
  const delivery = renderDelivery({
    agent: agent.name,
    totalPending,
    candidates,
    limits: { ...limits, maxMessages, maxBytes },
  });
  if (delivery.included.length === 0) return undefined;
  const threshold = isolationThreshold(maxAttempts);
  if ((await dispatchAttemptsOf(ctx, agent, delivery.included)).some((n) => n >= threshold)) return undefined;
  return delivery;
}

/**
 * Offers, in the running turn, complete coverage of every message the steer carries whole, keyed
 * by the SHA-256 of the steered text: it joins the turn only when the driver sees the client
 * received exactly that text (its stream echoes the user message; DESIGN.md I9). Until then the
 * messages stay pending, and a steer the client never took is delivered by the next turn.
 */
export async function offerSteer(
  ctx: HostContext,
  agent: Principal,
  turnId: string,
  delivery: RenderedDelivery,
): Promise<DeliveredMessage[]> {
  const rendered = new Map(envelopeMessages(delivery.text).map((m) => [m.id, m]));
  const rows = [];
  for (const id of delivery.included) rows.push(await getMessageRow(ctx, agent, id));
  const projections = await loadProjections(ctx.store.db, rows);
  const offers: Parameters<typeof insertCoverageOffers>[1][number][] = [];
  const delivered: DeliveredMessage[] = [];
  const resultSha256 = sha256Hex(delivery.text);
  for (const [i, row] of rows.entries()) {
    const projection = projections[i] as MessageProjection;
    const seen = rendered.get(row.id);
    if (!seen || seen.body !== projection.body || seen.subject !== (projection.subject ?? null)) continue;
    const text = projectionText(projection);
    offers.push({
      turn_id: turnId,
      result_sha256: resultSha256,
      message_seq: row.seq,
      sha256: sha256Hex(text),
      offset_units: 0,
      end_units: text.length,
      total_units: text.length,
    });
    delivered.push({ id: row.id, projection, attachments: projection.attachments });
  }
  if (offers.length === 0) return [];
  const open = await ctx.store.transaction(async (trx) => {
    const turn = await findTurn(trx, turnId);
    if (turn?.state !== 'open' || turn.agent_id !== agent.id) return false;
    await insertCoverageOffers(trx, offers);
    return true;
  });
  return open ? delivered : [];
}
