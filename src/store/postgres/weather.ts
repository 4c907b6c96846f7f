import type { PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { isConnectionLoss } from '../../core/connection-loss.js';
import { SluiceError } from '../../core/errors.js';
import { noteLockTimeout } from './lock-timeout.js';
import { backoffMs, type RetryPolicy } from './retry.js';

/**
 * PostgreSQL restarting, failing over or dropping a connection is weather, not a bug: the request
 * it touches fails with `unavailable` (one line, retryable) and the process goes on. This module
 * recognises such failures, words them, and wraps the pool so that no pooled client can end the
 * process and a connection is retried with backoff before a request gives up.
 */

/** Where a request stood when its connection was lost. */
export type Applied = 'no' | 'unknown';

/**
 * The one line a request gets when the database went away under it. `applied: 'no'` (no
 * connection, or lost inside a transaction before its commit) is safe to run again as it is;
 * `'unknown'` (lost while a commit or a one-statement write ran) is safe to retry only with the
 * same idempotency key, which stores a send once whichever way it went.
 */
export function databaseUnavailable(display: string, err: unknown, applied: Applied): SluiceError {
  const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0];
  const what =
    applied === 'no'
      ? `cannot reach PostgreSQL at ${display} (${reason}); nothing was changed, try again`
      : `lost the connection to PostgreSQL at ${display} mid-request (${reason}); it may or may not have taken effect: retry (a send with the same idempotency key)`;
  return new SluiceError('unavailable', what, { reason: 'database', applied });
}

/**
 * `pg-pool`'s error when every connection stayed checked out for its whole wait: the server is
 * reachable, the process's own requests hold them all (e.g. waiting on locks), so no retry here.
 */
function isPoolWaitTimeout(err: unknown): boolean {
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.startsWith('timeout exceeded when trying to connect');
}

function allConnectionsBusy(pool: pg.Pool, display: string): SluiceError {
  const { max, connectionTimeoutMillis } = (pool as { options?: Partial<pg.PoolConfig> }).options ?? {};
  const waited = connectionTimeoutMillis ? ` for ${Math.round(connectionTimeoutMillis / 1000)} s` : '';
  const count = max === undefined ? '' : `${max} `;
  return new SluiceError(
    'unavailable',
    `all ${count}connections to PostgreSQL at ${display} were busy${waited}; nothing was changed, try again`,
    { reason: 'busy' },
  );
}

/** Marks a failure whose connection attempts already used up their wait: no caller waits again. */
const WAITED = Symbol('waited for the database');

/** True for a failure this module raised that left nothing changed (safe to run again as is). */
export function isNotApplied(err: unknown): boolean {
  return (
    err instanceof SluiceError &&
    err.code === 'unavailable' &&
    err.data?.reason === 'database' &&
    err.data.applied === 'no' &&
    !(WAITED in err)
  );
}

/**
 * How long a request waits for the database to come back before it answers `unavailable`: a
 * restart takes about a second (docs/postgres.md), so most requests arriving during one are served
 * when it ends instead of failing.
 */
export const RECONNECT_POLICY = { budgetMs: 5_000, baseMs: 20, maxMs: 250 };

/**
 * Runs `run` again while it fails with nothing applied, with jittered exponential backoff, for up
 * to `budgetMs` in all; then (or on any other failure) its error stands.
 */
export async function retryNotApplied<T>(
  run: () => Promise<T>,
  policy: { budgetMs: number; baseMs: number; maxMs: number } = RECONNECT_POLICY,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<T> {
  const started = Date.now();
  const backoff: RetryPolicy = {
    attempts: Number.POSITIVE_INFINITY,
    baseMs: policy.baseMs,
    maxMs: policy.maxMs,
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      const wait = backoffMs(attempt, backoff);
      if (!isNotApplied(err) || Date.now() - started + wait > policy.budgetMs) throw err;
      await sleep(wait);
    }
  }
}

type RawResult = PostgresQueryResult<unknown>;
export type RawClient = {
  query(sql: string, parameters: ReadonlyArray<unknown>): Promise<RawResult>;
  release(destroy?: boolean): void;
};

/** Statements that open an explicit transaction (Kysely's) and end it ("rollback to savepoint" does not). */
const BEGIN = /^\s*(begin|start transaction)\b/i;
const END = /^\s*(commit|end|rollback(?!\s+to\b))\b/i;
const ROLLBACK = /^\s*rollback(?!\s+to\b)\b/i;

/**
 * Wraps a `pg` pool so that the weather stays outside:
 * - a checked-out client has an 'error' listener for as long as it is out (`pg` emits 'error' on a
 *   client whose connection ends, and with no listener that ended the process: the fault found);
 * - getting a connection is retried with backoff for a while (nothing was sent yet);
 * - a lost connection fails the statement with `unavailable`, saying whether anything may have
 *   been applied: inside an explicit transaction before its commit nothing was (the server rolls
 *   back a transaction whose session ends), otherwise the outcome is unknown;
 * - the rollback Kysely sends after such a failure is answered locally (there is no session to
 *   roll back), so the request's own error is the one reported, and the client is discarded.
 */
export function weatherProofPool(
  pool: pg.Pool,
  display: string,
  /** The sessions' effective lock_timeout once known, noted on a 55P03 (lock-timeout.ts). */
  lockTimeoutMs: () => number | undefined = () => undefined,
): { connect(): Promise<RawClient>; end(): Promise<void> } {
  // An idle client losing its connection: the pool drops it and connects anew when asked.
  pool.on('error', () => undefined);
  const acquire = () =>
    pool.connect().catch((err: unknown) => {
      if (isPoolWaitTimeout(err)) throw allConnectionsBusy(pool, display);
      throw isConnectionLoss(err) ? databaseUnavailable(display, err, 'no') : err;
    });
  return {
    async connect(): Promise<RawClient> {
      const client = await retryNotApplied(acquire).catch((err: unknown) => {
        if (err instanceof SluiceError) Object.defineProperty(err, WAITED, { value: true });
        throw err;
      });
      let lost: unknown;
      let inTransaction = false;
      const onError = (err: unknown) => {
        lost ??= err;
      };
      client.on('error', onError);
      // Inside a transaction and before its commit, a lost session applied nothing; so does a
      // lost BEGIN. Anything else (the commit, a statement in its own implicit transaction) may have.
      const applied = (sqlText: string): Applied =>
        BEGIN.test(sqlText) || (inTransaction && !END.test(sqlText)) ? 'no' : 'unknown';
      return {
        async query(sqlText, parameters) {
          if (lost !== undefined) {
            if (ROLLBACK.test(sqlText)) {
              inTransaction = false;
              return { command: 'ROLLBACK', rowCount: 0, rows: [] };
            }
            throw databaseUnavailable(display, lost, applied(sqlText));
          }
          try {
            const result = (await client.query(sqlText, [...parameters])) as unknown as RawResult;
            if (BEGIN.test(sqlText)) inTransaction = true;
            else if (END.test(sqlText)) inTransaction = false;
            return result;
          } catch (err) {
            if (!isConnectionLoss(err)) throw noteLockTimeout(err, lockTimeoutMs());
            lost ??= err;
            throw databaseUnavailable(display, err, applied(sqlText));
          }
        },
        release(destroy?: boolean) {
          client.removeListener('error', onError);
          // A lost client is removed from the pool (pg-pool also drops any it finds unqueryable).
          client.release(lost !== undefined ? true : destroy);
        },
      };
    },
    end: () => pool.end(),
  };
}
