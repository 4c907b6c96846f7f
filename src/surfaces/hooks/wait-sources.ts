// Where `sluice wait` reads from: SQLite straight from the file with a read-only connection (the
// host services only when it must), PostgreSQL through the host services and LISTEN/NOTIFY.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { type DeliveryLimits, renderDelivery } from '../../core/envelope.js';
import { SluiceError } from '../../core/errors.js';
import type { HookEnvironment } from './hook-cli.js';
import { openPendingReader, type PendingReader } from './sqlite-pending.js';
import { type StopWatching, watchSqliteCommits } from './wait-watch.js';

/** Re-checks of data_version after a WAL write event, until the commit is visible (see sqliteSource). */
const COMMIT_FOLLOW_UP_MS = [25, 100, 300, 1_000, 3_000];

const isPostgres = (db: string | undefined) => db !== undefined && /^postgres(ql)?:\/\//.test(db);

/** The source for the store `where` names: PostgreSQL through the host, SQLite from the file. */
export function openWaitSource(where: HookEnvironment, limits: Partial<DeliveryLimits>): Promise<WaitSource> {
  return isPostgres(where.db) ? hostSource(where, limits) : sqliteSource(where, limits);
}

/** What a wait reads and watches: the slice it would print, and the commits that may change it. */
export interface WaitSource {
  render(): Promise<string>;
  watch(onChange: () => void): StopWatching;
  close(): Promise<void>;
}

/**
 * SQLite: one read-only connection kept for the whole wait. It reads the slice the way the hook
 * does (the host services only for a schema it does not know or attachments to copy), and its
 * `PRAGMA data_version` tells a commit by another connection from the file events that opening and
 * reading cause, so a waiter never wakes itself.
 */
async function sqliteSource(where: HookEnvironment, limits: Partial<DeliveryLimits>): Promise<WaitSource> {
  const path = where.db ?? join(where.home, 'sluice.db');
  if (!existsSync(path)) throw new SluiceError('not_found', `no sluice store at ${path} (run sluice init)`);
  let gate: InstanceType<typeof BetterSqlite3>;
  try {
    gate = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new SluiceError('unavailable', `cannot open the sluice store ${path}: ${(err as Error).message}`);
  }
  const version = () => gate.pragma('data_version', { simple: true }) as number;
  let seen = -1;
  let reader: PendingReader | null = null;
  let host: WaitSource | undefined;
  try {
    reader = openPendingReader(path);
  } catch (err) {
    gate.close();
    throw err;
  }
  const throughHost = async () => {
    host ??= await hostSource(where, limits);
    return host.render();
  };
  const maxMessages = limits.maxMessages ?? 16;
  return {
    async render() {
      // Taken before reading: a commit during the read shows as a change and is read again.
      seen = version();
      if (reader === null) return throughHost();
      const slice = reader.pendingSlice(where.agent, maxMessages + 1);
      if (slice.candidates.slice(0, maxMessages).some((c) => c.attachments.length > 0)) return throughHost();
      return renderDelivery({
        agent: slice.agentName,
        totalPending: slice.totalPending,
        candidates: slice.candidates,
        limits,
      }).text;
    },
    watch: (onChange) => {
      // The last write to the WAL file can come before the commit shows in the shared-memory index
      // (updated after the fsync, through mmap: no file event). So a write event is followed by a
      // few bounded re-checks of data_version — a handful of PRAGMAs per commit, none while idle.
      let followUps: NodeJS.Timeout[] = [];
      const probe = () => {
        if (gate.open && version() !== seen) onChange();
      };
      const stop = watchSqliteCommits(path, () => {
        probe();
        for (const t of followUps) clearTimeout(t);
        followUps = COMMIT_FOLLOW_UP_MS.map((ms) => setTimeout(probe, ms));
      });
      return () => {
        stop();
        for (const t of followUps) clearTimeout(t);
      };
    },
    async close() {
      reader?.close();
      gate.close();
      await host?.close();
    },
  };
}

/** The host services, kept open for the wait; woken by the store's own change feed. */
async function hostSource(where: HookEnvironment, limits: Partial<DeliveryLimits>): Promise<WaitSource> {
  const [{ openHost }, { resolvePrincipal }, { deliveryFor }, { attachmentCopies }] = await Promise.all([
    import('../../host/identity/index.js'),
    import('../../host/identity/index.js'),
    import('../../host/queue/index.js'),
    import('../../host/media/index.js'),
  ]);
  const host = await openHost({ home: where.home, db: where.db });
  try {
    const agent = await resolvePrincipal(host, where.agent);
    const attachmentPath = attachmentCopies(host, agent, (line) => process.stderr.write(`sluice: ${line}\n`));
    return {
      render: async () => (await deliveryFor(host, agent, { limits, attachmentPath })).text,
      // PostgreSQL: LISTEN/NOTIFY. (For SQLite the file watch above is used instead.)
      watch: (onChange) => host.store.watchChanges(onChange),
      close: () => host.store.close(),
    };
  } catch (err) {
    await host.store.close();
    throw err;
  }
}
