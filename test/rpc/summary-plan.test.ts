import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedQueueCards } from '../../bench/queue.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { transitionEntry } from '../../src/host/queue/inbox.js';
import { queueSummary } from '../../src/host/queue/queue.js';
import { findInboxEntry } from '../../src/store/ops/inbox.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { type LoggedStore, openLoggedStore } from '../support/logged-store.js';

describe('a 10,000-card queue summary', () => {
  let h: TestHost;
  let helper: Principal;
  let store: LoggedStore;

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
    store = openLoggedStore(h.home);
  }, 60_000);
  afterAll(async () => {
    await store.close();
    await h.close();
  });

  it('is computed from counters and index probes, never selecting a body', async () => {
    const summary = await queueSummary(store.db, helper);
    expect(summary).toMatchObject({
      total: 10_000,
      counts: { person: 10_000, agent: 0, unknown: 0 },
      resumeAvailable: true,
    });
    expect(store.statements.length).toBeGreaterThan(0);
    for (const q of store.statements) {
      expect(q.sql).not.toMatch(/\bbody\b/);
      // The messages table (where bodies live) is never touched; `select *` only reads tables without a body.
      expect(q.sql).not.toMatch(/"messages"/);
      const star = /^select \* from "(\w+)"/.exec(q.sql);
      if (star) {
        const columns = store.raw.prepare(`pragma table_info(${star[1]})`).all() as { name: string }[];
        expect(columns.map((c) => c.name)).not.toContain('body');
      }
      expect(q.sql).not.toMatch(/count\(/i);
    }
  });

  it('uses an index or primary key for every table it touches (EXPLAIN QUERY PLAN), never a full scan', async () => {
    store.statements.length = 0;
    await queueSummary(store.db, helper);
    for (const q of store.statements) {
      const details = store.planOf(q);
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
