import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, sql, type Transaction } from 'kysely';
import { isDiskFull } from '../../core/store-faults.js';
import { createGroupCommit } from '../group-commit.js';
import type { Database } from '../schema.js';
import type { Durability, Store } from '../store.js';
import { createFileBlobStore } from './blobs.js';
import { type Checkpointer, lazyCheckpointer, WAL_SIZE_LIMIT_BYTES } from './checkpointer.js';
import { LockWaitingSqliteDialect } from './driver.js';
import { sqliteAccessFault } from './file-access.js';
import { sqliteMigrations } from './migrations.js';
import { DEFAULT_LOCK_WAIT, isWriteLockTimeout, SYNCHRONOUS_BUSY_TIMEOUT_MS } from './retry.js';
import { sqliteSearchIndex } from './search.js';
import { watchDataVersion } from './watch.js';

export interface SqliteStoreOptions {
  /** Database file path, or ':memory:'. */
  path: string;
  /** Folder for content-addressed blobs. */
  blobDir: string;
  durability?: Durability;
  /** Poll interval for cross-process change detection. */
  pollMs?: number;
  /** How long a statement waits for a lock another process holds before it fails (default 10 s). */
  writeLockWaitMs?: number;
}

/** Opens (creating and migrating as needed) the embedded SQLite store. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  try {
    return await openSqliteFile(options);
  } catch (err) {
    // A folder or file the user may not use: one line naming it (file-access.ts).
    throw sqliteAccessFault(err, options.path) ?? err;
  }
}

async function openSqliteFile(options: SqliteStoreOptions): Promise<Store> {
  const raw = new BetterSqlite3(options.path);
  raw.pragma('busy_timeout = 10000');
  raw.pragma('journal_mode = WAL');
  const synchronous = options.durability === 'normal' ? 'NORMAL' : 'FULL';
  raw.pragma(`synchronous = ${synchronous}`);
  raw.pragma('foreign_keys = ON');
  // Sorts and merges of small pages (ORDER BY over a UNION ALL, a temp B-tree) would each open and
  // remove a temporary file: 0.2 ms of syscalls for a 20-row page; in memory they cost µs.
  raw.pragma('temp_store = MEMORY');
  // Past the pragmas above (opening may block: nothing is served yet), SQLite itself waits only a
  // few ms for a lock; the driver awaits the rest, so the event loop runs meanwhile (driver.ts).
  raw.pragma(`busy_timeout = ${SYNCHRONOUS_BUSY_TIMEOUT_MS}`);
  const lockWait = {
    ...DEFAULT_LOCK_WAIT,
    deadlineMs: options.writeLockWaitMs ?? DEFAULT_LOCK_WAIT.deadlineMs,
  };
  const db = new Kysely<Database>({ dialect: new LockWaitingSqliteDialect(raw, { lockWait }) });
  const migrator = new Migrator({ db, provider: sqliteMigrations });
  const { error } = await migrator.migrateToLatest();
  if (error) {
    await db.destroy();
    throw error;
  }
  let closed = false;
  // The driver already waits (asynchronously) for the write lock at BEGIN IMMEDIATE: no retry here.
  // Checkpoints leave the commit path once the host is busy (checkpointer.ts); an in-memory
  // database has no WAL to copy.
  const checkpoints: Checkpointer | undefined =
    options.path === ':memory:'
      ? undefined
      : lazyCheckpointer({
          path: options.path,
          synchronous,
          setAutocheckpoint: (pages) => {
            raw.pragma(`wal_autocheckpoint = ${pages}`);
            // Between two checkpoints a busy host may write thousands of pages; once the WAL
            // starts over, its file is cut back to this size instead of keeping its largest.
            raw.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
          },
        });
  const transaction = async <T>(fn: (trx: Transaction<Database>) => Promise<T>) => {
    const result = await db.transaction().execute(fn);
    checkpoints?.poke();
    return result;
  };
  return {
    dialect: 'sqlite',
    db,
    blobs: createFileBlobStore(options.blobDir),
    searchIndex: sqliteSearchIndex,
    transaction,
    // One fsync per group of concurrent sends instead of one per send.
    // A group whose BEGIN never got the lock fails every member at once (none ran, and alone each
    // would wait out the deadline again); so does a full disk (alone each would meet it again).
    sendTransaction: createGroupCommit(transaction, {
      failsEveryMember: (err) => isWriteLockTimeout(err) || isDiskFull(err),
    }),
    // A deferred BEGIN: the snapshot is taken at the first read and no write lock is asked for
    // (the store's own transactions begin IMMEDIATE). The one connection is held meanwhile, so this
    // process's writes wait for the few reads; other processes' writes do not show in them.
    readSnapshot: (fn) =>
      db.connection().execute(async (conn) => {
        await sql`begin deferred`.execute(conn);
        try {
          const result = await fn(conn);
          await sql`commit`.execute(conn);
          return result;
        } catch (err) {
          await sql`rollback`.execute(conn);
          throw err;
        }
      }),
    watchChanges: (onChange) => watchDataVersion(raw, onChange, options.pollMs ?? 50),
    async close() {
      if (closed) return;
      closed = true;
      await checkpoints?.close();
      await db.destroy();
    },
  };
}
