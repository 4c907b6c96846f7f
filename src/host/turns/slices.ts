import { DEFAULT_DELIVERY_LIMITS, type DeliveryLimits, renderDelivery } from '../../core/envelope.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { attachmentCopies } from '../media/materialize.js';
import { candidatesBehind, type RenderedFrom, renderedDeliveryFor } from '../queue/delivery.js';
import { dispatchState } from '../queue/queue.js';
import { DEFAULT_MAX_DISPATCH_ATTEMPTS, dispatchAttemptsOf } from './attempts.js';

/** The limits a driven turn renders within, and how often a message may fail to settle. */
export interface SliceLimits {
  limits?: Partial<DeliveryLimits> | undefined;
  maxAttempts?: number | undefined;
}

/** What a running turn already carries: the budget a steer may still use. */
export interface SteerBudget {
  /** Ids the turn carries (its delivery, then earlier steers), FIFO. */
  carried: readonly string[];
  /** UTF-8 bytes of the envelopes the turn already carries. */
  bytes: number;
}

/**
 * Unsettled attempts after which a message is dispatched alone: 2 under the default limit of 3, so
 * one driver kill re-delivers the same turn as it was, and only a repeat isolates the message.
 */
export function isolationThreshold(maxAttempts: number = DEFAULT_MAX_DISPATCH_ATTEMPTS): number {
  return Math.max(1, Math.min(2, maxAttempts - 1));
}

/**
 * Attachment paths are best effort: one that cannot be materialised is listed without a path and
 * with the reason (`path_error`), which the model reads.
 */
function attachmentPathFor(ctx: HostContext, agent: Principal) {
  return attachmentCopies(ctx, agent);
}

/**
 * The slice a turn dispatches next. Attachment paths in the envelope are best effort (the turn
 * content says why one is missing), never an error that stops the turn. A message whose earlier
 * turns did not settle {@link isolationThreshold} times is dispatched alone — the messages before
 * it go first, without it — so when its turn fails again the failure is its own, and the messages
 * that shared its earlier turns never reach the limit because of it.
 */
export async function renderDispatch(
  ctx: HostContext,
  agent: Principal,
  { limits, maxAttempts }: SliceLimits,
): Promise<RenderedFrom> {
  const attachmentPath = attachmentPathFor(ctx, agent);
  const rendered = await renderedDeliveryFor(ctx, agent, { limits, attachmentPath });
  const attempts = await dispatchAttemptsOf(ctx, agent, rendered.delivery.included);
  const retried = attempts.findIndex((n) => n >= isolationThreshold(maxAttempts));
  if (retried < 0 || rendered.delivery.included.length === 1) return rendered;
  return renderedDeliveryFor(ctx, agent, {
    limits: { ...limits, maxMessages: Math.max(1, retried) },
    attachmentPath,
  });
}

/**
 * The slice to steer into a running turn: the pending messages queued behind the ones the turn
 * already carries, within what is left of the turn's limits — or nothing. Nothing when the queue
 * is not deliverable (paused, a returned card blocks), when the carried messages are no longer the
 * queue's head in order (steering would overtake, I7), when the budget is spent, or when a message
 * whose earlier turns did not settle is next (it goes alone, in a turn of its own).
 */
export async function renderSteer(
  ctx: HostContext,
  agent: Principal,
  { limits, maxAttempts }: SliceLimits,
  budget: SteerBudget,
): Promise<RenderedFrom | undefined> {
  const maxMessages = (limits?.maxMessages ?? DEFAULT_DELIVERY_LIMITS.maxMessages) - budget.carried.length;
  const maxBytes = (limits?.maxBytes ?? DEFAULT_DELIVERY_LIMITS.maxBytes) - budget.bytes;
  if (maxMessages < 1 || maxBytes < 1) return undefined;
  if (!(await dispatchState(ctx, agent)).deliverable) return undefined;
  const behind = await candidatesBehind(
    ctx,
    agent,
    budget.carried,
    maxMessages,
    attachmentPathFor(ctx, agent),
  );
  if (!behind) return undefined;
  const delivery = renderDelivery({
    agent: agent.name,
    totalPending: behind.totalPending,
    candidates: behind.candidates,
    limits: { ...limits, maxMessages, maxBytes },
  });
  if (delivery.included.length === 0) return undefined;
  const threshold = isolationThreshold(maxAttempts);
  if ((await dispatchAttemptsOf(ctx, agent, delivery.included)).some((n) => n >= threshold)) return undefined;
  return { delivery, projections: behind.projections };
}
