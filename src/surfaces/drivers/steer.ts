import {
  DEFAULT_DELIVERY_LIMITS,
  type DeliveryLimits,
  type RenderedDelivery,
  renderDelivery,
} from '../../core/envelope.js';
import { sha256Hex } from '../../core/fragment.js';
import type { HostContext } from '../../host/context.js';
import { candidatesBehind } from '../../host/delivery.js';
import { dispatchAttemptsOf } from '../../host/dispatch-attempts.js';
import { materializeAttachment } from '../../host/materialize.js';
import type { Principal } from '../../host/principals.js';
import { dispatchState } from '../../host/queue.js';
import { offerToTurn } from '../../host/receipts.js';
import { carriedWhole, type DeliveredMessage } from './delivered.js';
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
  if (!(await dispatchState(ctx, agent)).deliverable) return undefined;
  const behind = await candidatesBehind(ctx, agent, budget.carried, maxMessages, (a) =>
    materializeAttachment(ctx, agent, a.attachment_id).catch(() => undefined),
  );
  if (!behind) return undefined;
  const { candidates, totalPending } = behind;
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
  const { reads, delivered } = await carriedWhole(ctx, agent, delivery);
  if (reads.length === 0) return [];
  const open = await offerToTurn(ctx, agent, turnId, sha256Hex(delivery.text), reads);
  return open ? delivered : [];
}
