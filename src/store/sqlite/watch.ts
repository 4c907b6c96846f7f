import type BetterSqlite3 from 'better-sqlite3';
import { isBusy } from './retry.js';

/**
 * SQLite has no cross-process notifications; `PRAGMA data_version` changes whenever another
 * connection commits, so polling it is cheap (no table read) and sees every process's writes.
 */
export function watchDataVersion(
  raw: BetterSqlite3.Database,
  onChange: () => void,
  pollMs: number,
): () => void {
  let last = raw.pragma('data_version', { simple: true }) as number;
  const timer = setInterval(() => {
    if (!raw.open) return;
    let now: number;
    try {
      now = raw.pragma('data_version', { simple: true }) as number;
    } catch (err) {
      // A read is refused only while the WAL is being recovered or reset: look again next tick.
      if (isBusy(err)) return;
      throw err;
    }
    if (now !== last) {
      last = now;
      onChange();
    }
  }, pollMs);
  timer.unref();
  return () => clearInterval(timer);
}
