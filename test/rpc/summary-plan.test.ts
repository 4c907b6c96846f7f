import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedQueueCards } from '../../bench/queue.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { transitionEntry } from '../../src/host/queue/inbox.js';
import { queueSummary } from '../../src/host/queue/queue.js';
import { findInboxEntry } from '../../src/store/ops/inbox.js';
import type { Database } from '../../src/store/schema.js';
import { openTestHost, type TestHost } from '../support/host.js';

describe('a 10,000-card queue summary', () => {
  let h: TestHost;
  let helper: Principal;
  let raw: BetterSqlite3.Database;
  let logged: Kysely<Database>;
  const queries: { sql: string; parameters: readonly unknown[] }[] = [];

  beforeAll(async () => {
    h = await openTestHost();
    helper = await h.agent('helper');
    await seedQueueCards(h.ctx, helper, h.owner, 10_000);
    // One returned card so the blocking-card probe has something to find.
    await h.ctx.store.transaction(async (trx) => {
      const entry = await findInboxEntry(trx, helper.id, 5_000);
      if (!entry) throw new Error('seeded entry missing');
      await transitionEntry(trx, entry, 'returned', new Date().toISOString(), { failure_kind: 'error' });
    });
    // A second connection to the same file, logging every statement the summary compiles.
    raw = new BetterSqlite3(join(h.home, 'sluice.db'));
    logged = new Kysely<Database>({
      dialect: new SqliteDialect({ database: raw }),
      log: (event) => {
        if (event.level === 'query')
          queries.push({ sql: event.query.sql, parameters: event.query.parameters });
      },
    });
  }, 60_000);
  afterAll(async () => {
    await logged.destroy();
    await h.close();
  });

  it('is computed from counters and index probes, never selecting a body', async () => {
    const summary = await queueSummary(logged, helper);
    expect(summary).toMatchObject({
      total: 10_000,
      counts: { person: 10_000, agent: 0, unknown: 0 },
      resumeAvailable: true,
    });
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) {
      expect(q.sql).not.toMatch(/\bbody\b/);
      // The messages table (where bodies live) is never touched; `select *` only reads tables without a body.
      expect(q.sql).not.toMatch(/"messages"/);
      const star = /^select \* from "(\w+)"/.exec(q.sql);
      if (star) {
        const columns = raw.prepare(`pragma table_info(${star[1]})`).all() as { name: string }[];
        expect(columns.map((c) => c.name)).not.toContain('body');
      }
      expect(q.sql).not.toMatch(/count\(/i);
    }
  });

  it('uses an index or primary key for every table it touches (EXPLAIN QUERY PLAN), never a full scan', async () => {
    queries.length = 0;
    await queueSummary(logged, helper);
    for (const q of queries) {
      const plan = raw.prepare(`explain query plan ${q.sql}`).all(...(q.parameters as unknown[])) as {
        detail: string;
      }[];
      const details = plan.map((p) => p.detail);
      expect(details.length).toBeGreaterThan(0);
      for (const detail of details) {
        if (/^SCAN /.test(detail)) expect(detail).toMatch(/USING (COVERING )?INDEX|PRIMARY KEY/);
        if (/^SEARCH /.test(detail))
          expect(detail).toMatch(/USING (COVERING )?INDEX|PRIMARY KEY|INTEGER PRIMARY KEY/);
        expect(detail).not.toMatch(/USE TEMP B-TREE/);
      }
    }
  });
});
