import {
  CompiledQuery,
  type DatabaseConnection,
  type QueryResult,
  SelectQueryNode,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from 'kysely';
import { asStoreFault } from '../../core/store-faults.js';
import { SqliteStoreAdapter } from './dialect.js';
import { sqliteAccessFault } from './file-access.js';
import { DEFAULT_LOCK_WAIT, isBusy, type LockWaitPolicy, retryWhileBusy } from './retry.js';

/** The part of a better-sqlite3 statement the driver uses. */
interface SqliteStatement {
  readonly reader: boolean;
  all(parameters: readonly unknown[]): unknown[];
  run(parameters: readonly unknown[]): { changes: number; lastInsertRowid: number | bigint };
  iterate(parameters: readonly unknown[]): IterableIterator<unknown>;
}

/** The part of a better-sqlite3 database the driver uses. */
export interface SqliteDatabase {
  readonly inTransaction: boolean;
  /** The database file's path (`:memory:` for none): a refused file is named by it. */
  readonly name: string;
  prepare(sqlText: string): SqliteStatement;
  close(): void;
}

const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');

/** Kysely's one-connection mutex, with `lend`: others may use the connection while its holder waits. */
class ConnectionMutex {
  #held: Promise<void> | undefined;
  #release: (() => void) | undefined;

  async lock(): Promise<void> {
    while (this.#held) await this.#held;
    this.#held = new Promise((resolve) => {
      this.#release = resolve;
    });
  }

  unlock(): void {
    const release = this.#release;
    this.#held = undefined;
    this.#release = undefined;
    release?.();
  }

  /** Gives the connection up for `ms`, then waits until it is free again and takes it back. */
  async lend(ms: number, sleep: (ms: number) => Promise<void>): Promise<void> {
    this.unlock();
    try {
      await sleep(ms);
    } finally {
      await this.lock();
    }
  }
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The one connection. A statement that finds a lock taken by another process (SQLITE_BUSY after
 * the short synchronous `busy_timeout`) is tried again after an awaited pause rather than inside
 * SQLite's busy handler, which would block the event loop for the whole wait. Only outside a
 * transaction: BEGIN IMMEDIATE (where a write transaction takes the lock) and autocommit
 * statements, which did nothing when they failed. Inside a transaction the lock is already ours.
 */
class LockWaitingConnection implements DatabaseConnection {
  readonly #db: SqliteDatabase;
  readonly #mutex: ConnectionMutex;
  readonly #policy: LockWaitPolicy;
  // Kysely prepares every statement on every execution; preparing costs more than running most
  // of our small queries, so statements are reused by SQL text (bounded, oldest evicted first).
  readonly #statements = new Map<string, SqliteStatement>();
  readonly #capacity: number;

  constructor(db: SqliteDatabase, mutex: ConnectionMutex, policy: LockWaitPolicy, capacity: number) {
    this.#db = db;
    this.#mutex = mutex;
    this.#policy = policy;
    this.#capacity = capacity;
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return Promise.resolve(this.#run<R>(query));
    } catch (err) {
      if (!isBusy(err) || this.#db.inTransaction) return Promise.reject(this.#fault(err));
      return retryWhileBusy(
        () => this.#run<R>(query),
        () => !this.#db.inTransaction,
        (ms) => this.#mutex.lend(ms, this.#policy.sleep ?? defaultSleep),
        this.#policy,
      ).catch((e: unknown) => Promise.reject(this.#fault(e)));
    }
  }

  /** A store fault as one line; a file the user may not write names its path (file-access.ts). */
  #fault(err: unknown): unknown {
    return sqliteAccessFault(err, this.#db.name) ?? asStoreFault(err);
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('SQLite streams select queries only');
    for (const row of this.#prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] };
  }

  #run<R>(query: CompiledQuery): QueryResult<R> {
    const statement = this.#prepare(query.sql);
    if (statement.reader) return { rows: statement.all(query.parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(query.parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  #prepare(sqlText: string): SqliteStatement {
    let statement = this.#statements.get(sqlText);
    if (statement) return statement;
    statement = this.#db.prepare(sqlText);
    if (this.#statements.size >= this.#capacity)
      this.#statements.delete(this.#statements.keys().next().value as string);
    this.#statements.set(sqlText, statement);
    return statement;
  }
}

export interface LockWaitingDriverOptions {
  /** How a statement waits for a lock another process holds (default `DEFAULT_LOCK_WAIT`). */
  lockWait?: LockWaitPolicy;
  /** Prepared statements kept for reuse. */
  statementCacheSize?: number;
}

/**
 * Kysely's SQLite driver (one connection behind a mutex; commit, rollback and savepoints are
 * its own), with two changes: every transaction takes the write lock up front, and a wait for a
 * lock another process holds is awaited, with the connection lent to reads and other work.
 */
class LockWaitingSqliteDriver extends SqliteDriver {
  readonly #db: SqliteDatabase;
  readonly #mutex = new ConnectionMutex();
  readonly #connection: LockWaitingConnection;

  constructor(db: SqliteDatabase, options: LockWaitingDriverOptions) {
    super({ database: db as unknown as SqliteDialectConfig['database'] });
    this.#db = db;
    this.#connection = new LockWaitingConnection(
      db,
      this.#mutex,
      options.lockWait ?? DEFAULT_LOCK_WAIT,
      options.statementCacheSize ?? 500,
    );
  }

  override async init(): Promise<void> {}

  override async acquireConnection(): Promise<DatabaseConnection> {
    await this.#mutex.lock();
    return this.#connection;
  }

  // Kysely opens transactions with a plain BEGIN; two processes that both read then write would
  // deadlock on the lock upgrade, so every write transaction takes the write lock up front.
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(BEGIN_IMMEDIATE);
  }

  // SQLite rolls a transaction back by itself on some errors (SQLITE_FULL, SQLITE_IOERR, …); a
  // ROLLBACK then fails with "cannot rollback - no transaction is active", which would replace
  // the error that names the cause.
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (!this.#db.inTransaction) return;
    await super.rollbackTransaction(connection);
  }

  override async releaseConnection(): Promise<void> {
    this.#mutex.unlock();
  }

  override async destroy(): Promise<void> {
    this.#db.close();
  }
}

/**
 * SQLite dialect over `LockWaitingSqliteDriver` on an open better-sqlite3 database, whose adapter
 * carries the store's dialect (dialect.ts).
 */
export class LockWaitingSqliteDialect extends SqliteDialect {
  readonly #db: SqliteDatabase;
  readonly #options: LockWaitingDriverOptions;

  constructor(db: SqliteDatabase, options: LockWaitingDriverOptions = {}) {
    super({ database: db as unknown as SqliteDialectConfig['database'] });
    this.#db = db;
    this.#options = options;
  }

  override createDriver() {
    return new LockWaitingSqliteDriver(this.#db, this.#options);
  }

  override createAdapter() {
    return new SqliteStoreAdapter();
  }
}
