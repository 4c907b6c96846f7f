import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { Database } from '../../src/store/schema.js';

/** One statement a query function ran, as compiled. */
export interface LoggedStatement {
  sql: string;
  parameters: readonly unknown[];
}

/**
 * A second connection to a test host's SQLite file that records every statement run through it,
 * so a test can call a store function on `db` and read the plans SQLite chose for exactly what ran.
 */
export interface LoggedStore {
  db: Kysely<Database>;
  raw: BetterSqlite3.Database;
  statements: LoggedStatement[];
  /** The EXPLAIN QUERY PLAN lines of a statement that ran (with its parameters). */
  planOf(statement: LoggedStatement): string[];
  close(): Promise<void>;
}

export function openLoggedStore(home: string): LoggedStore {
  const raw = new BetterSqlite3(join(home, 'sluice.db'));
  const statements: LoggedStatement[] = [];
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: raw }),
    log: (event) => {
      if (event.level === 'query')
        statements.push({ sql: event.query.sql, parameters: event.query.parameters });
    },
  });
  return {
    db,
    raw,
    statements,
    planOf: (s) =>
      (
        raw.prepare(`explain query plan ${s.sql}`).all(...(s.parameters as unknown[])) as { detail: string }[]
      ).map((p) => p.detail),
    close: () => db.destroy(),
  };
}
