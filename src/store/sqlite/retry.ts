import { SluiceError } from '../../core/errors.js';

/**
 * SQLITE_BUSY and its extended codes (SQLITE_BUSY_RECOVERY, …): another connection holds a lock
 * this statement needs. The statement did nothing, so running it again is safe.
 */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

export interface LockWaitPolicy {
  /** How long a statement waits in all for a lock another process holds before it fails. */
  deadlineMs: number;
  /** First pause between tries; it doubles up to `maxMs`, each with ±50 % jitter. */
  baseMs: number;
  maxMs: number;
  random?: () => number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** 10 s in all, as `busy_timeout = 10000` was; tries at most every 50 ms or so. */
export const DEFAULT_LOCK_WAIT: LockWaitPolicy = { deadlineMs: 10_000, baseMs: 2, maxMs: 50 };

/**
 * What SQLite itself may block the event loop for before it answers SQLITE_BUSY (`busy_timeout`):
 * a lock held for a moment (another process's send) is taken without a turn of the loop, and a
 * longer wait is never more than this in one piece.
 */
export const SYNCHRONOUS_BUSY_TIMEOUT_MS = 5;

/** Exponential pause with ±50 % jitter, so processes that collided do not collide again in step. */
export function lockWaitBackoffMs(attempt: number, policy: LockWaitPolicy): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
  return ceiling * (0.5 + (policy.random ?? Math.random)());
}

/** The one-line error a statement fails with once it has waited `deadlineMs` for the lock. */
export function writeLockTimeout(deadlineMs: number): SluiceError {
  const seconds = Number((deadlineMs / 1000).toFixed(1));
  return new SluiceError(
    'unavailable',
    `the database is busy: another process held its write lock for ${seconds} s; try again`,
    { reason: 'busy' },
  );
}

/** True for the error of `writeLockTimeout`: the lock never came, so nothing was written. */
export function isWriteLockTimeout(err: unknown): boolean {
  return err instanceof SluiceError && err.code === 'unavailable' && err.data?.reason === 'busy';
}

/**
 * Runs `attempt` (one synchronous statement) again while it fails with SQLITE_BUSY and `mayRetry`
 * holds, pausing with jittered backoff between tries through `pause` (which lends the connection
 * to other work meanwhile), until `policy.deadlineMs` has passed since the first failure.
 */
export async function retryWhileBusy<T>(
  attempt: () => T,
  mayRetry: () => boolean,
  pause: (ms: number) => Promise<void>,
  policy: LockWaitPolicy,
): Promise<T> {
  const now = policy.now ?? Date.now;
  const started = now();
  for (let tries = 1; ; tries++) {
    const waited = now() - started;
    if (waited >= policy.deadlineMs) throw writeLockTimeout(policy.deadlineMs);
    await pause(Math.min(lockWaitBackoffMs(tries, policy), policy.deadlineMs - waited));
    try {
      return attempt();
    } catch (err) {
      if (!isBusy(err) || !mayRetry()) throw err;
    }
  }
}
