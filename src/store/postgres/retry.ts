/**
 * SQLSTATEs after which re-running the whole transaction is safe and likely to succeed:
 * serialization_failure and deadlock_detected. Nothing else is retried: a constraint violation or
 * a user error would fail the same way again.
 */
const TRANSIENT = new Set(['40001', '40P01']);

/** A conflict with a concurrent transaction that the database rolled back for us. */
export function isTransientConflict(err: unknown): boolean {
  return typeof err === 'object' && err !== null && TRANSIENT.has(String((err as { code?: unknown }).code));
}

export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseMs: 5, maxMs: 400 };

/** Exponential delay with ±50 % jitter, so colliding writers do not collide again in step. */
export function backoffMs(attempt: number, policy: RetryPolicy): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
  return ceiling * (0.5 + (policy.random ?? Math.random)());
}

/**
 * Runs `attempt` until it succeeds, retrying only transient conflicts (never user errors, never
 * constraint violations) up to `policy.attempts` times in all.
 */
export async function retryTransient<T>(
  run: () => Promise<T>,
  policy: RetryPolicy = DEFAULT_RETRY,
): Promise<T> {
  const sleep = policy.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (!isTransientConflict(err) || attempt >= policy.attempts) throw err;
      await sleep(backoffMs(attempt, policy));
    }
  }
}
