import { SluiceError } from '../../core/errors.js';
import { TokenBuckets } from '../../core/token-bucket.js';
import type { Principal } from '../../host/identity/index.js';
import { isHostOwner } from '../../host/identity/index.js';

/** How fast one principal may create channels through this server (docs/security.md, "Consent"). */
export interface ChannelCreateRateSettings {
  /** Channels one principal may create at once before the rate applies. */
  channelCreateBurst: number;
  /** Channels a minute one principal regains, up to the burst. */
  channelCreatesPerMinute: number;
  /** 1: the owner is limited too; 0 (default): the owner is exempt (shared with the send rate). */
  rateLimitOwner: number;
}

/**
 * The per-principal gate on `channel.create` of one server: returns for a creation that may go
 * ahead, or throws `rate_limited` with `retryAfterMs` in its data; nothing is created then. A flood
 * of groups naming people is what it stops (each would be an invitation in their list).
 */
export function channelCreateRateGate(settings: ChannelCreateRateSettings, now: () => number = Date.now) {
  const buckets = new TokenBuckets(settings.channelCreateBurst, settings.channelCreatesPerMinute);
  return (principal: Principal): void => {
    if (settings.rateLimitOwner === 0 && isHostOwner(principal)) return;
    const waitMs = buckets.take(principal.id, now());
    if (waitMs === 0) return;
    throw new SluiceError(
      'rate_limited',
      `over ${settings.channelCreatesPerMinute} new channels a minute (bursts of ${settings.channelCreateBurst}) for ${principal.name}; retry in ${Math.ceil(waitMs / 1000)} s; nothing was created`,
      { retryAfterMs: waitMs },
    );
  };
}
