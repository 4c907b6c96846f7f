import { sql } from 'kysely';
import type { Db } from '../store.js';

/**
 * The lock timeout a statement ran under, noted on its 55P03 error so that the busy line
 * (src/core/store-faults.ts) states the one in effect: the URL may set `lock_timeout` itself
 * (pg lets it override POSTGRES_LOCK_TIMEOUT_MS), so the constant alone may be wrong.
 */

/** PostgreSQL's SQLSTATE for a statement cancelled by `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * The session's effective `lock_timeout` in milliseconds (0: none), as the server resolved the
 * URL, the client's startup setting and any role or database default.
 */
export async function readLockTimeoutMs(db: Db): Promise<number> {
  const { rows } = await sql<{ ms: number }>`
    select setting::int as ms from pg_settings where name = 'lock_timeout'`.execute(db);
  return rows[0]?.ms ?? 0;
}

/** Notes `lockTimeoutMs` on `err` when it is a lock timeout (55P03); returns `err`. */
export function noteLockTimeout(err: unknown, lockTimeoutMs: number | undefined): unknown {
  if (lockTimeoutMs === undefined || err === null || typeof err !== 'object') return err;
  if ((err as { code?: unknown }).code !== LOCK_NOT_AVAILABLE || !Object.isExtensible(err)) return err;
  Object.defineProperty(err, 'lockTimeoutMs', { value: lockTimeoutMs, configurable: true });
  return err;
}
