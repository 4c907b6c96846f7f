import { Kysely, Migrator, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { SluiceError } from '../../core/errors.js';
import type { Database } from '../schema.js';
import type { Db, Store } from '../store.js';
import { createDatabaseBlobStore } from './blobs.js';
import { eventsHeldBack } from './commit-order.js';
import { PostgresStoreAdapter } from './dialect.js';
import { readLockTimeoutMs } from './lock-timeout.js';
import { postgresMigrations, SchemaTablesIntrospector, WRITE_LOCK_CLASS } from './migrations.js';
import { retryTransient } from './retry.js';
import { postgresSearchIndex } from './search.js';
import { batchingSends } from './send-batch.js';
import { textSafePool } from './text.js';
import { createEventListener } from './watch.js';
import { retryNotApplied, weatherProofPool } from './weather.js';

export interface PostgresStoreOptions {
  /** `postgres://user@host:port/db`, optionally with `?pool=N&schema=NAME`. */
  url: string;
  /** Pool size (overrides `?pool=`); default 10. */
  pool?: number;
  /** Schema to use (created if absent; overrides `?schema=`); default the server's search_path. */
  schema?: string;
  /** Shown in pg_stat_activity; default `sluice`. */
  applicationName?: string;
}

export const DEFAULT_POOL_SIZE = 10;

/**
 * PostgresDialect whose introspector stays inside the current schema (see migrations.ts) and whose
 * adapter carries the store's dialect (dialect.ts).
 */
class SchemaScopedPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>) {
    return new SchemaTablesIntrospector(db);
  }

  override createAdapter() {
    return new PostgresStoreAdapter();
  }
}
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** First key of the two-key advisory lock that serialises migrations (the second is the schema). */
const MIGRATION_LOCK_CLASS = 0x51c3;

export interface PostgresSettings {
  /** The URL without Sluice's own query parameters, for `pg`. */
  connectionString: string;
  pool: number;
  schema: string | undefined;
  /** `host:port/db`, safe to print (no credentials). */
  display: string;
}

/** Splits Sluice's `pool` and `schema` parameters off the URL and validates them. */
export function parsePostgresUrl(
  url: string,
  overrides: { pool?: number; schema?: string } = {},
): PostgresSettings {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SluiceError('invalid_params', 'the database URL is not a valid postgres:// URL');
  }
  const poolText = parsed.searchParams.get('pool');
  const schemaText = parsed.searchParams.get('schema');
  parsed.searchParams.delete('pool');
  parsed.searchParams.delete('schema');
  const pool = overrides.pool ?? (poolText === null ? DEFAULT_POOL_SIZE : Number(poolText));
  if (!Number.isInteger(pool) || pool < 1 || pool > 1000) {
    throw new SluiceError(
      'invalid_params',
      `pool size must be an integer from 1 to 1000, not ${String(poolText ?? pool).slice(0, 40)}`,
    );
  }
  const schema = overrides.schema ?? schemaText ?? undefined;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new SluiceError(
      'invalid_params',
      'schema must be a lowercase identifier: letters, digits and _ (at most 63)',
    );
  }
  const display = `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${parsed.pathname}`;
  return { connectionString: parsed.toString(), pool, schema, display };
}

/** Counts and sequence numbers arrive as JS numbers (int8 and numeric are strings by default in pg). */
const NUMERIC_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC)
      return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * How long a statement waits for a lock another session holds (a long `LOCK TABLE`, a migration
 * elsewhere) before PostgreSQL fails it with 55P03: the request fails `unavailable` with the
 * busy line (store-faults.ts) instead of waiting as long as the lock is held. SQLite's busy wait
 * is as long. A URL's own `?lock_timeout=` overrides it (pg sends the URL's); the busy line states
 * the one in effect (lock-timeout.ts).
 */
export const POSTGRES_LOCK_TIMEOUT_MS = 10_000;

function clientConfig(settings: PostgresSettings, applicationName: string): pg.ClientConfig {
  return {
    connectionString: settings.connectionString,
    application_name: applicationName,
    types: NUMERIC_TYPES,
    lock_timeout: POSTGRES_LOCK_TIMEOUT_MS,
    ...(settings.schema !== undefined ? { options: `-c search_path=${settings.schema}` } : {}),
  };
}

function unreachable(settings: PostgresSettings, err: unknown): SluiceError {
  const reason = err instanceof Error ? err.message.split('\n')[0] : String(err);
  return new SluiceError('unavailable', `cannot use PostgreSQL at ${settings.display}: ${reason}`);
}

/**
 * Runs the migrations under a session advisory lock held on a connection of its own (outside the
 * pool, so a pool of one still has a connection for the Migrator). Kysely's own lock is a table,
 * which concurrent first starts race to create; the advisory lock makes hosts take turns, and
 * every host after the first finds the schema current. Returns the schema migrated.
 */
async function migrate(
  db: Kysely<Database>,
  config: pg.ClientConfig,
  wanted: string | undefined,
): Promise<string> {
  // Waits for another host's migration however long it takes (no lock timeout on this one).
  const lock = new pg.Client({ ...config, lock_timeout: 0 });
  lock.on('error', () => undefined);
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1, hashtext($2))', [MIGRATION_LOCK_CLASS, wanted ?? '']);
    if (wanted !== undefined) await lock.query(`create schema if not exists "${wanted}"`);
    const current = await lock.query<{ schema: string | null }>('select current_schema() as schema');
    const schema = current.rows[0]?.schema;
    if (!schema)
      throw new SluiceError('unavailable', 'no schema on the search_path exists: name one with ?schema=');
    // Named explicitly: Kysely looks for its migration tables across every schema it can see,
    // and would find another schema's on a shared database.
    const migrator = new Migrator({ db, provider: postgresMigrations, migrationTableSchema: schema });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
    return schema;
  } finally {
    await lock.end().catch(() => undefined);
  }
}

/** Opens (creating and migrating as needed) a PostgreSQL store; several hosts may share it. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const settings = parsePostgresUrl(options.url, {
    ...(options.pool !== undefined ? { pool: options.pool } : {}),
    ...(options.schema !== undefined ? { schema: options.schema } : {}),
  });
  const config = clientConfig(settings, options.applicationName ?? 'sluice');
  const pool = new pg.Pool({
    ...config,
    max: settings.pool,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 30_000,
  });
  // Read once migrated: every pooled session starts with the same settings.
  let lockTimeoutMs: number | undefined;
  // No client, idle or checked out, can end the process when the server goes; a lost connection
  // fails its request with `unavailable` (weather.ts).
  const db = new Kysely<Database>({
    dialect: new SchemaScopedPostgresDialect({
      pool: textSafePool(weatherProofPool(pool, settings.display, () => lockTimeoutMs)),
    }),
  });
  let schema: string;
  try {
    schema = await migrate(db, config, settings.schema);
    lockTimeoutMs = await readLockTimeoutMs(db);
  } catch (err) {
    await db.destroy().catch(() => undefined);
    throw err instanceof SluiceError ? err : unreachable(settings, err);
  }
  const listener = createEventListener({
    clientConfig: config,
    schema,
    heldBack: () => eventsHeldBack(db).catch(() => false),
  });
  const sendDb = batchingSends(db, { lockTimeoutMs });
  let closed = false;
  return {
    dialect: 'postgres',
    db,
    blobs: createDatabaseBlobStore(db),
    searchIndex: postgresSearchIndex,
    transaction,
    // A send takes the write lock shared, inside sluice_send (migration 008): sends run in
    // parallel, serialised only per recipient by their queue rows, and still wait for (and hold
    // off) any other write. A plain send is that one statement; the plain sends waiting in this
    // process commit together, one call of sluice_send_many per batch (send-batch.ts, migration
    // 011): one round trip, flush and notification per batch. One with a key or attachments adds
    // begin, its other statements and commit. (Grouping them on one connection with a savepoint
    // round trip each measured slower than running them side by side, so they stay apart.)
    sendTransaction<T>(fn: (db: Db) => Promise<T>, options: { oneStatement?: boolean } = {}) {
      // One statement in its own implicit transaction: a deadlock or serialization failure rolled
      // all of it back, so it runs again like any transaction.
      // A lost connection is run again only where nothing was applied (weather.ts): a
      // one-statement send whose connection went mid-statement may have committed, so it is not.
      if (options.oneStatement) return retryTransient(() => fn(sendDb));
      return retryNotApplied(() =>
        retryTransient(() => db.transaction().setIsolationLevel('read committed').execute(fn)),
      );
    },
    readSnapshot<T>(fn: (db: Db) => Promise<T>) {
      // REPEATABLE READ: every statement sees the snapshot of the first. Read only: it never
      // conflicts with a writer, so a serialization failure cannot happen (retried all the same).
      return retryNotApplied(() =>
        retryTransient(() =>
          db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(fn),
        ),
      );
    },
    watchChanges: (onChange) => listener.watchChanges(onChange),
    async close() {
      if (closed) return;
      closed = true;
      await listener.close();
      await db.destroy();
    },
  };
  function transaction<T>(fn: (trx: Transaction<Database>) => Promise<T>) {
    // Write transactions other than sends take one advisory lock per schema before anything else,
    // so they commit one at a time, as SQLite's single writer does, and never beside a send (which
    // takes it shared). Event order no longer depends on it: readers follow commit order through
    // each event's xid (migration 008, commit-order.ts). Reads never take the lock.
    // Inside, READ COMMITTED with the row locks the ops take (UPDATE queues … RETURNING,
    // findInboxEntry's FOR UPDATE) keeps per-agent state correct on its own; any
    // deadlock or serialization failure the server reports runs the transaction again.
    // A transaction whose connection went before its commit applied nothing: it runs again.
    return retryNotApplied(() =>
      retryTransient(() =>
        db
          .transaction()
          .setIsolationLevel('read committed')
          .execute(async (trx) => {
            await sql`select pg_advisory_xact_lock(${WRITE_LOCK_CLASS}, hashtext(${schema}))`.execute(trx);
            return fn(trx);
          }),
      ),
    );
  }
}
