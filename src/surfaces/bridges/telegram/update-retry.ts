import type { Update } from 'grammy/types';
import { type FaultCounts, faultForPerson, faultText, isStoreFault } from './faults.js';

/** How often one update is tried, and how long the bridge waits between tries. */
export interface RetryPolicy {
  /** Tries of one update failing for any reason but the store; then it is given up (default 5). */
  updateAttempts: number;
  /** The first wait; each next one doubles, up to {@link RetryPolicy.maxDelayMs} (default 1 s). */
  firstDelayMs: number;
  /** The longest wait (default 60 s). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { updateAttempts: 5, firstDelayMs: 1000, maxDelayMs: 60_000 };

/** Jittered exponential backoff: first, 2×first, 4×first … up to the maximum (half to full). */
export function backoffMs(policy: RetryPolicy, attempt: number): number {
  const base = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(attempt, 20));
  return base / 2 + Math.random() * (base / 2);
}

export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });

/**
 * Handles one update, trying it again on failure: without a bound while the store is unavailable
 * (nothing may be skipped for a fault that heals by itself), at most `updateAttempts` times for
 * anything else (a Telegram call that keeps failing, a bug), after which the update is given up:
 * logged with a count, the sender told if they are paired, and confirmed, so it cannot hold back
 * the updates behind it. Resolves true when the update may be confirmed, false when stopping.
 */
export async function handleWithRetry(
  update: Update,
  options: {
    handle(update: Update): Promise<void>;
    signal: AbortSignal;
    policy: RetryPolicy;
    counts: FaultCounts;
    log(line: string): void;
    /** `cause` is the fault in words for the sender ({@link faultForPerson}); the log has the full one. */
    onAbandon(update: Update, cause: string): Promise<void>;
  },
): Promise<boolean> {
  const { policy, signal, log } = options;
  const id = update.update_id;
  for (let failures = 0, storeWaits = 0; ; ) {
    try {
      await options.handle(update);
      return true;
    } catch (err) {
      // grammY wraps a handler's error in a BotError whose `error` is the cause.
      const cause = (err as { error?: unknown }).error ?? err;
      if (signal.aborted) return false;
      if (isStoreFault(cause)) {
        log(`update ${id} waiting for the store: ${faultText(cause)}; retrying`);
        await sleep(backoffMs(policy, storeWaits++), signal);
      } else if (++failures >= policy.updateAttempts) {
        options.counts.abandonedUpdates++;
        log(
          `update ${id} gave up after ${failures} tries: ${faultText(cause)}; confirmed unhandled, ${options.counts.abandonedUpdates} given up so far`,
        );
        await options.onAbandon(update, faultForPerson(cause));
        return true;
      } else {
        log(
          `update ${id} not handled yet (try ${failures} of ${policy.updateAttempts}): ${faultText(cause)}; retrying`,
        );
        await sleep(backoffMs(policy, failures - 1), signal);
      }
      if (signal.aborted) return false;
    }
  }
}
