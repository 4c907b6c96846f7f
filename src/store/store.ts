import type { Readable } from 'node:stream';
import type { DialectAdapter, Kysely, RawBuilder, Selectable, Transaction } from 'kysely';
import type { Database, EventsTable, MessageSource, MessagesTable } from './schema.js';

/** A transaction or the root handle: every store operation accepts either. */
export type Db = Kysely<Database> | Transaction<Database>;

export type Durability = 'full' | 'normal';

/** Content-addressed attachment bytes, named by SHA-256 hex. Never inside the message tables. */
export interface BlobStore {
  put(sha256: string, bytes: Uint8Array): Promise<void>;
  get(sha256: string): Promise<Uint8Array | null>;
  /**
   * Moves a finished file (written in the home, its digest computed while writing) into the
   * store. The store owns `path` afterwards: it is renamed into place or removed, on failure too.
   */
  putFile(sha256: string, path: string): Promise<void>;
  /**
   * The bytes `[range.start, range.end]` (inclusive; default all) as a stream that reads a bounded
   * slice at a time, or null when the blob is absent.
   */
  openRead(sha256: string, range?: { start: number; end: number }): Promise<Readable | null>;
  has(sha256: string): Promise<boolean>;
  delete(sha256: string): Promise<boolean>;
  /** Every stored blob with its size and modification time (ms since epoch). */
  list(): Promise<{ sha256: string; size: number; mtimeMs: number }[]>;
}

export interface SearchQuery {
  query: string;
  channelIds: readonly string[];
  /** Keyset: only messages with seq below this (newest-first paging). */
  beforeSeq?: number;
  limit: number;
}

/** Full-text search over message bodies and subjects; each dialect uses its own engine. */
export interface SearchIndex {
  /** Matching message seqs, newest first. */
  search(db: Db, q: SearchQuery): Promise<number[]>;
}

/** An event as stored (ops/events.ts). */
export type EventRow = Selectable<EventsTable>;

/**
 * What one send stores: the message row (less what the database fills in), how it came in
 * (`origin`, null for a direct send) and its fan-out's source.
 */
export type SentMessageRow = Pick<
  MessagesTable,
  | 'id'
  | 'channel_id'
  | 'author_id'
  | 'created_at'
  | 'body'
  | 'body_bytes'
  | 'subject'
  | 'reply_to'
  | 'actions'
  | 'attachments'
> & { origin: string | null; source: MessageSource };

/**
 * What the databases do each their own way under the domain queries of src/store/ops: ops call
 * these and never ask which database they run on. Each dialect folder implements it (dialect.ts)
 * and hands it to Kysely with its adapter, so every handle on the store carries it (`dialectOf`).
 */
export interface StoreDialect {
  /**
   * Whether a read inside a write transaction must lock the rows it decides a change on (`SELECT …
   * FOR UPDATE`): true where writers run side by side (PostgreSQL); SQLite's `BEGIN IMMEDIATE`
   * already serialises them, and it has no FOR UPDATE.
   */
  readonly locksRowsRead: boolean;
  /** Events after the event `afterSeq` in commit order, at most `limit` (ops/events.ts). */
  listEventsAfter(db: Db, afterSeq: number, limit: number): Promise<EventRow[]>;
  /** The last event in commit order (0 for none): a reader that starts now continues after it. */
  lastEventSeq(db: Db): Promise<number>;
  /** A send's message, inbox entries and events (ops/send.ts, `storeAndFanOut`). */
  storeAndFanOut(db: Db, m: SentMessageRow): Promise<number | undefined>;
  /**
   * An aggregate: the JSON text of an array of one object per row aggregated, its keys and values
   * `entries` in that order, in `orderBy` order (without it, in no particular order); `[]` over no
   * rows (SQLite `json_group_array`, PostgreSQL `json_agg`).
   */
  jsonArrayAgg(
    entries: readonly (readonly [key: string, value: RawBuilder<unknown>])[],
    orderBy?: RawBuilder<unknown>,
  ): RawBuilder<string>;
}

/** Kysely's adapter for a store's database, carrying the store's dialect. */
export interface StoreDialectAdapter extends DialectAdapter {
  readonly storeDialect: StoreDialect;
}

/**
 * The dialect of the store `db` belongs to, from its Kysely adapter: the root handle, a
 * transaction and the send path's batching handle all share it, so ops need no extra parameter.
 */
export function dialectOf(db: Db): StoreDialect {
  const adapter: Partial<StoreDialectAdapter> = db.getExecutor().adapter;
  if (adapter.storeDialect === undefined)
    throw new Error(
      'this database handle was not opened as a Sluice store (its adapter has no store dialect)',
    );
  return adapter.storeDialect;
}

/** Calls `onChange` after commits made by any process; returns a function that stops watching. */
export type WatchChanges = (onChange: () => void) => () => void;

/**
 * The storage backend. Domain queries are written once over Kysely (src/store/ops); what differs
 * between databases lives in the dialect folders, file for file.
 */
export interface Store {
  readonly dialect: 'sqlite' | 'postgres';
  readonly db: Kysely<Database>;
  readonly blobs: BlobStore;
  readonly searchIndex: SearchIndex;
  /** Runs `fn` in a write transaction, retrying only on the dialect's transient lock errors. */
  transaction<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
  /**
   * Runs a send's writes, acknowledged (resolved) only after they commit. SQLite: concurrent calls
   * share one transaction and one fsync (group commit, src/store/group-commit.ts), each under its
   * own savepoint. PostgreSQL: a transaction of its own that other sends run beside (docs/postgres.md);
   * with `oneStatement` (`fn` runs a single statement there, atomic by itself) that statement joins
   * the process's other waiting sends in one call and one commit (postgres/send-batch.ts).
   */
  sendTransaction<T>(fn: (db: Db) => Promise<T>, options?: { oneStatement?: boolean }): Promise<T>;
  /**
   * Runs reads that must agree with each other (a count and the rows it counts) in one snapshot,
   * taking no write lock. Without it each statement sees the commits made before it started, so a
   * send committing between two reads showed in the second only (PostgreSQL: a delivery that
   * counted one pending message and listed none).
   */
  readSnapshot<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  watchChanges: WatchChanges;
  close(): Promise<void>;
}
