import { SluiceError } from '../../core/errors.js';
import { TokenBuckets } from '../../core/token-bucket.js';
import type { Principal } from '../../host/identity/index.js';
import { isHostOwner } from '../../host/identity/index.js';

/** How fast one principal may send through this server (docs/security.md, "Limits before work"). */
export interface SendRateSettings {
  /** Sends one principal may make at once before the rate applies. */
  sendBurst: number;
  /** Sends a minute one principal regains, up to the burst. */
  sendsPerMinute: number;
  /** 1: the owner is limited too; 0 (default): the owner is exempt. */
  rateLimitOwner: number;
}

/**
 * The per-principal send gate of one server: `admit` returns for a send that may go ahead, or
 * throws `rate_limited` with `retryAfterMs` in its data (never a silent drop). Every send path of
 * the server — `message.send` over WebSocket and POST, MCP `message_send` and `message_reply` —
 * draws from the same bucket.
 */
export function sendRateGate(settings: SendRateSettings, now: () => number = Date.now) {
  const buckets = new TokenBuckets(settings.sendBurst, settings.sendsPerMinute);
  return (principal: Principal): void => {
    if (settings.rateLimitOwner === 0 && isHostOwner(principal)) return;
    const waitMs = buckets.take(principal.id, now());
    if (waitMs === 0) return;
    throw new SluiceError(
      'rate_limited',
      `over ${settings.sendsPerMinute} messages a minute (bursts of ${settings.sendBurst}) for ${principal.name}; retry in ${Math.ceil(waitMs / 1000)} s; nothing was sent`,
      { retryAfterMs: waitMs },
    );
  };
}
