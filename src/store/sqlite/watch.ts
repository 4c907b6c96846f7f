import type BetterSqlite3 from 'better-sqlite3';

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
    const now = raw.pragma('data_version', { simple: true }) as number;
    if (now !== last) {
      last = now;
      onChange();
    }
  }, pollMs);
  timer.unref();
  return () => clearInterval(timer);
}
