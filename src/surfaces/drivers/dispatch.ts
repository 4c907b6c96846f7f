import type { DeliveryLimits, RenderedDelivery } from '../../core/envelope.js';
import type { HostContext } from '../../host/context.js';
import { deliveryFor } from '../../host/delivery.js';
import {
  DEFAULT_MAX_DISPATCH_ATTEMPTS,
  dispatchAttemptsOf,
  REPEATED_FAILURE_KIND,
} from '../../host/dispatch-attempts.js';
import { materializeAttachment } from '../../host/materialize.js';
import type { Principal } from '../../host/principals.js';

/**
 * Unsettled attempts after which a message is dispatched alone: 2 under the default limit of 3, so
 * one driver kill re-delivers the same turn as it was, and only a repeat isolates the message.
 */
export function isolationThreshold(maxAttempts: number = DEFAULT_MAX_DISPATCH_ATTEMPTS): number {
  return Math.max(1, Math.min(2, maxAttempts - 1));
}

/**
 * The delivery a driver dispatches next. Attachment paths in the envelope are best effort: one
 * that cannot be materialised is listed without a path (the turn content says why), never an
 * error that stops the turn. A message whose earlier turns did not settle {@link
 * isolationThreshold} times is dispatched alone — the messages before it go first, without it —
 * so when its turn fails again the failure is its own, and the messages that shared its earlier
 * turns never reach the limit because of it.
 */
export async function renderDispatch(
  ctx: HostContext,
  agent: Principal,
  limits: Partial<DeliveryLimits> | undefined,
  maxAttempts?: number,
): Promise<RenderedDelivery> {
  const attachmentPath = (a: { attachment_id: string }) =>
    materializeAttachment(ctx, agent, a.attachment_id).catch(() => undefined);
  const delivery = await deliveryFor(ctx, agent, { limits, attachmentPath });
  const attempts = await dispatchAttemptsOf(ctx, agent, delivery.included);
  const threshold = isolationThreshold(maxAttempts);
  const retried = attempts.findIndex((n) => n >= threshold);
  if (retried < 0 || delivery.included.length === 1) return delivery;
  return deliveryFor(ctx, agent, {
    limits: { ...limits, maxMessages: Math.max(1, retried) },
    attachmentPath,
  });
}

/** The terminal line for a message returned because its turns kept ending without settling. */
export function returnedStatusLine(
  agent: string,
  returned: { id: string; reason: string },
  at: Date = new Date(),
): string {
  return `${at.toISOString().slice(11, 19)} ${agent} returned ${returned.id} (${REPEATED_FAILURE_KIND}): ${returned.reason}; resume or withdraw it to go on`;
}
