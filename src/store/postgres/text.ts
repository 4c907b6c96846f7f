import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';

/**
 * PostgreSQL `text` cannot hold U+0000, while Sluice stores any text a sender writes (SQLite does).
 * Every string crossing the driver is escaped reversibly: U+0000 becomes ESC '0' and ESC itself
 * becomes ESC 'e', where ESC is the noncharacter U+FDD0. The mapping is injective, so equality,
 * uniqueness and keys behave exactly as on the original text; only strings containing U+0000 or
 * U+FDD0 are stored differently, and they read back identical.
 */
const ESC = '\uFDD0';
const NEEDS_ENCODING = /[\u0000\uFDD0]/;
const ENCODE = /[\u0000\uFDD0]/g;
const DECODE = /\uFDD0([0e])/g;

export function encodeText(text: string): string {
  if (!NEEDS_ENCODING.test(text)) return text;
  return text.replace(ENCODE, (c) => (c === '\u0000' ? `${ESC}0` : `${ESC}e`));
}

export function decodeText(text: string): string {
  if (!text.includes(ESC)) return text;
  return text.replace(DECODE, (_, tag: string) => (tag === '0' ? '\u0000' : ESC));
}

function encodeParam(value: unknown): unknown {
  return typeof value === 'string' ? encodeText(value) : value;
}

function decodeRow(row: unknown): unknown {
  if (row === null || typeof row !== 'object') return row;
  const record = row as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const value = record[key];
    if (typeof value === 'string' && value.includes(ESC)) record[key] = decodeText(value);
  }
  return record;
}

type RawClient = {
  query(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<unknown>>;
  release(destroy?: boolean): void;
};

/** Wraps a `pg` pool for Kysely so parameters are encoded and result rows decoded. */
export function textSafePool(pool: { connect(): Promise<RawClient>; end(): Promise<void> }): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      return {
        async query(sqlText: unknown, parameters?: ReadonlyArray<unknown>) {
          // Kysely passes a cursor object only for streaming, which Sluice does not use.
          if (typeof sqlText !== 'string')
            throw new Error('streaming queries are not supported by this store');
          const result = await client.query(sqlText, (parameters ?? []).map(encodeParam));
          if (Array.isArray(result.rows)) result.rows.forEach(decodeRow);
          return result;
        },
        release: (destroy?: boolean) => client.release(destroy),
      } as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
