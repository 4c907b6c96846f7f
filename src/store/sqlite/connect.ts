import BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  Kysely,
  Migrator,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  type Transaction,
} from 'kysely';
import { createGroupCommit } from '../group-commit.js';
import type { Database } from '../schema.js';
import type { Durability, Store } from '../store.js';
import { createFileBlobStore } from './blobs.js';
import { sqliteMigrations } from './migrations.js';
import { sqliteSearchIndex } from './search.js';
import { watchDataVersion } from './watch.js';

// Kysely opens transactions with a plain BEGIN; two processes that both read then write would
// deadlock on the lock upgrade, so every write transaction takes the write lock up front.
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }
  override createDriver() {
    return new ImmediateSqliteDriver(this.#config);
  }
}

/**
 * Kysely prepares every statement on every execution; preparing costs more than running most of
 * our small queries, so reuse prepared statements by SQL text (bounded, oldest evicted first).
 */
function withStatementCache(raw: BetterSqlite3.Database, capacity = 500): SqliteDialectConfig['database'] {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => raw.close(),
    prepare(sqlText: string) {
      let statement = cache.get(sqlText);
      if (statement) return statement;
      statement = raw.prepare(sqlText);
      if (cache.size >= capacity) cache.delete(cache.keys().next().value as string);
      cache.set(sqlText, statement);
      return statement;
    },
  } as SqliteDialectConfig['database'];
}

export interface SqliteStoreOptions {
  /** Database file path, or ':memory:'. */
  path: string;
  /** Folder for content-addressed blobs. */
  blobDir: string;
  durability?: Durability;
  /** Poll interval for cross-process change detection. */
  pollMs?: number;
}

/** Opens (creating and migrating as needed) the embedded SQLite store. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  const raw = new BetterSqlite3(options.path);
  raw.pragma('journal_mode = WAL');
  raw.pragma(`synchronous = ${options.durability === 'normal' ? 'NORMAL' : 'FULL'}`);
  raw.pragma('busy_timeout = 10000');
  raw.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({
    dialect: new ImmediateSqliteDialect({ database: withStatementCache(raw) }),
  });
  const migrator = new Migrator({ db, provider: sqliteMigrations });
  const { error } = await migrator.migrateToLatest();
  if (error) {
    await db.destroy();
    throw error;
  }
  let closed = false;
  // busy_timeout already waits for the lock; better-sqlite3 is synchronous, so no retry loop.
  const transaction = <T>(fn: (trx: Transaction<Database>) => Promise<T>) => db.transaction().execute(fn);
  return {
    dialect: 'sqlite',
    db,
    blobs: createFileBlobStore(options.blobDir),
    searchIndex: sqliteSearchIndex,
    transaction,
    // One fsync per group of concurrent sends instead of one per send.
    sendTransaction: createGroupCommit(transaction),
    watchChanges: (onChange) => watchDataVersion(raw, onChange, options.pollMs ?? 50),
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}
