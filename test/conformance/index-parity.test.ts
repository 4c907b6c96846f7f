import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendsUnderTest, type ConformanceHost, openConformanceHost, withAdmin } from './backend.js';

// Both backends run the same queries, so they need the same indexes: a migration that adds an
// index on one and not the other leaves that backend's reads walking tables (it happened once:
// migration 021 was first written for SQLite only). Constraint indexes are named by each database
// in its own way and are left out; PostgreSQL's own extras are listed here.
const POSTGRES_ONLY = new Map([
  ['events_by_commit', 'the commit-order reader (sends commit in parallel there)'],
  ['messages_search', 'full-text search (SQLite has its FTS5 table instead)'],
]);

describe.runIf(backendsUnderTest().includes('postgres'))('indexes on SQLite and PostgreSQL', () => {
  let lite: ConformanceHost;
  let postgres: ConformanceHost;
  let liteIndexes: Map<string, string>;
  let pgIndexes: Map<string, string>;

  beforeAll(async () => {
    lite = await openConformanceHost('sqlite');
    postgres = await openConformanceHost('postgres', 'indexes');
    const raw = new BetterSqlite3(join(lite.home, 'sluice.db'), { readonly: true });
    try {
      const rows = raw
        .prepare(`select name, sql from sqlite_master where type = 'index' and sql is not null`)
        .all() as { name: string; sql: string }[];
      liteIndexes = new Map(rows.map((r) => [r.name, r.sql]));
    } finally {
      raw.close();
    }
    const schema = new URL(postgres.db as string).searchParams.get('schema');
    const rows = await withAdmin(
      async (c) =>
        (
          await c.query<{ indexname: string; indexdef: string }>(
            `select i.indexname, i.indexdef from pg_indexes i
              where i.schemaname = $1
                and not exists (select 1 from pg_constraint k where k.conindid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass)`,
            [schema],
          )
        ).rows,
    );
    pgIndexes = new Map(rows.map((r) => [r.indexname, r.indexdef]));
  }, 60_000);
  afterAll(async () => {
    await lite?.close();
    await postgres?.close();
  });

  it('are the same, but for the ones PostgreSQL needs on its own', () => {
    expect(liteIndexes.size).toBeGreaterThan(10);
    const pgShared = [...pgIndexes.keys()].filter((name) => !POSTGRES_ONLY.has(name)).sort();
    expect(pgShared).toEqual([...liteIndexes.keys()].sort());
    for (const name of POSTGRES_ONLY.keys()) expect(pgIndexes.has(name), name).toBe(true);
  });

  it('hold the same entries where one is partial', () => {
    for (const [name, definition] of liteIndexes) {
      const where = /\bwhere\b(.*)$/i.exec(definition)?.[1];
      const pgDefinition = pgIndexes.get(name) ?? '';
      if (where === undefined) {
        expect(pgDefinition, name).not.toMatch(/\bWHERE\b/);
        continue;
      }
      // PostgreSQL prints the condition in its own words; the literals it names must be the same.
      const literals = (text: string) => [...text.matchAll(/'([^']*)'/g)].map((m) => m[1]).sort();
      expect(pgDefinition, name).toMatch(/\bWHERE\b/);
      expect(literals(pgDefinition), name).toEqual(literals(where));
    }
  });
});
