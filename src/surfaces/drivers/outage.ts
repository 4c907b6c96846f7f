import { isConnectionLoss } from '../../core/connection-loss.js';
import { SluiceError } from '../../core/errors.js';

/**
 * A driver outlives its database's weather (docs/postgres.md: a restart, a failover, a dropped
 * connection): the loop's reads and writes that fail because the database is unreachable are
 * retried with backoff while the client session stays up, and only errors no wait can fix end the
 * driver. This module decides which is which and does the waiting.
 */

/** `transient`: wait and try again; `fatal`: the driver ends with the error's one line. */
export type FaultClass = 'transient' | 'fatal';

/** Why a Sluice `unavailable` error may clear by itself (store faults: src/store/postgres/weather.ts, core/store-faults.ts). */
const TRANSIENT_REASONS = new Set(['database', 'connection', 'busy', 'io', 'disk_full']);

/**
 * Besides a lost connection ({@link isConnectionLoss}): faults that clear when tried again — SQLite
 * busy, and SQLSTATEs 53 (out of resources), 40001/40P01 (serialization failure, deadlock) and 55P03
 * (lock timeout). Everything else — 28 (authentication), 3D000 (no such database), 42 (schema) —
 * is a configuration no wait fixes.
 */
function clearsOnRetry(code: string): boolean {
  return (
    code === 'SQLITE_BUSY' ||
    code.startsWith('53') ||
    code === '40001' ||
    code === '40P01' ||
    code === '55P03'
  );
}

/**
 * Whether `err`, thrown by the driver loop's reads and writes, is the database's weather
 * (`transient`: the loop waits and retries) or not (`fatal`). A Sluice `unavailable` store fault is
 * transient (the store already words PostgreSQL going away this way); so are the raw shapes a
 * driver or the network may throw. Any other Sluice error (denied, not_found, conflict,
 * invalid_params) and any error of unknown shape is fatal: retrying a bug or a wrong configuration
 * forever would hide it, and the supervisor (or the person) sees the one line.
 */
export function classifyFault(err: unknown): FaultClass {
  if (err instanceof SluiceError) {
    const reason = err.data?.reason;
    return err.code === 'unavailable' && typeof reason === 'string' && TRANSIENT_REASONS.has(reason)
      ? 'transient'
      : 'fatal';
  }
  if (err === null || typeof err !== 'object') return 'fatal';
  if (isConnectionLoss(err)) return 'transient';
  const code = codeOf(err);
  return typeof code === 'string' && clearsOnRetry(code) ? 'transient' : 'fatal';
}

/**
 * Whether `err` says the database could not be reached (the store's `database`/`connection`
 * reasons, or a raw lost connection) — not merely that a retry might help. A turn that failed this
 * way is not its messages' fault; one that failed on a disk I/O error or a full disk may fail the
 * same way each time, so it counts against them (docs/drivers.md).
 */
export function isDatabaseAway(err: unknown): boolean {
  if (err instanceof SluiceError) {
    const reason = err.data?.reason;
    return err.code === 'unavailable' && (reason === 'database' || reason === 'connection');
  }
  return err !== null && typeof err === 'object' && isConnectionLoss(err);
}

/** An error's `code`; none from an object whose getters throw (a hostile shape). */
function codeOf(err: object): unknown {
  try {
    return (err as { code?: unknown }).code;
  } catch {
    return undefined;
  }
}

/** The first line of an error's message, at most 300 characters. */
export function faultLine(err: unknown): string {
  let text: string;
  try {
    text = err instanceof Error ? err.message : String(err);
  } catch {
    text = 'an error that cannot be shown';
  }
  return (text.split('\n')[0] ?? '').slice(0, 300);
}

/** What the loop reports while it waits the database out. */
export type OutageEvent =
  /** An attempt failed; the next comes in `retryInMs`. `attempt` counts from 1 within one outage. */
  | { phase: 'unavailable'; error: string; attempt: number; retryInMs: number }
  /** The operation succeeded again after `downMs` of failures. */
  | { phase: 'back'; downMs: number };

/** Backoff while the database is unreachable: 0.25 s doubling to 10 s, ±50 % jitter. */
export const OUTAGE_BACKOFF = { baseMs: 250, maxMs: 10_000 };

export interface OutageWait {
  /** Resolves when the driver is asked to stop: the wait ends with `aborted`. */
  aborted: Promise<'aborted'>;
  onOutage?: ((event: OutageEvent) => void) | undefined;
  /** Test seam: the delay before attempt `attempt + 1` (default: {@link OUTAGE_BACKOFF}, jittered). */
  backoffMs?: ((attempt: number) => number) | undefined;
}

function jitteredBackoff(attempt: number): number {
  const ms = Math.min(OUTAGE_BACKOFF.maxMs, OUTAGE_BACKOFF.baseMs * 2 ** Math.min(attempt - 1, 16));
  return Math.round(ms * (0.5 + Math.random()));
}

/**
 * Runs `op` until it succeeds, waiting out transient failures ({@link classifyFault}) with backoff
 * and reporting them through `onOutage`; a fatal failure is thrown. Resolves `aborted` if the
 * driver is stopped while it waits (the operation is not tried again then). `op` must be safe to
 * run again after a failure that may have applied (each of the loop's operations is).
 */
export async function throughOutage<T>(op: () => Promise<T>, wait: OutageWait): Promise<T | 'aborted'> {
  let began: number | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const value = await op();
      if (began !== undefined) wait.onOutage?.({ phase: 'back', downMs: Date.now() - began });
      return value;
    } catch (err) {
      if (classifyFault(err) === 'fatal') throw err;
      began ??= Date.now();
      const retryInMs = (wait.backoffMs ?? jitteredBackoff)(attempt);
      wait.onOutage?.({ phase: 'unavailable', error: faultLine(err), attempt, retryInMs });
      if ((await pauseOrAbort(retryInMs, wait.aborted)) === 'aborted') return 'aborted';
    }
  }
}

/** Waits `ms` (none when 0), or until aborted; the timer never outlives the wait. */
export async function pauseOrAbort(ms: number, aborted: Promise<'aborted'>): Promise<'aborted' | undefined> {
  if (ms <= 0) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const slept = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([slept, aborted]);
  } finally {
    clearTimeout(timer);
  }
}
