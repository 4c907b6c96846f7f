import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedQueueCards } from '../../bench/queue.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { listInboxEntries, newestPendingPersonEntry } from '../../src/store/ops/inbox.js';
import { inboxPositionOf, loadCards, queuedBody } from '../../src/store/ops/queue-pages.js';
import { pendingMessagesAfter } from '../../src/store/ops/reads.js';
import { PendingReader } from '../../src/surfaces/hooks/sqlite-pending.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { type LoggedStore, openLoggedStore } from '../support/logged-store.js';

// An agent that has consumed thousands of messages and has a few pending. Every read of "what is
// pending" (the model's unread page, the harness's delivery, the hook's slice, the device's queue
// page) must walk only pending entries: a walk that steps over the handled history costs more with
// every message the agent ever consumed (measured: 1 ms a page at 12,000 handled, against 0.07 ms).
// So must finding one of its cards by message id (the page's "around" and body reads).
// The plans are checked on a store without ANALYZE statistics, as every host runs.
const HANDLED = 3_000;
const PENDING = 25;

describe('reads of an agent with a long history', () => {
  let h: TestHost;
  let helper: Principal;
  let channelId: string;
  let store: LoggedStore;

  beforeAll(async () => {
    h = await openTestHost();
    helper = await h.agent('helper', 'turn');
    ({ channelId } = await seedQueueCards(h.ctx, helper, h.owner, HANDLED + PENDING));
    await sql`update inbox set state = 'handled' where agent_id = ${helper.id} and position <= ${HANDLED}`.execute(
      h.ctx.store.db,
    );
    await sql`update inbox set state = 'returned' where agent_id = ${helper.id} and position = ${HANDLED + 2}`.execute(
      h.ctx.store.db,
    );
    // The counters as the transitions would have left them.
    await sql`update queues set waiting = ${PENDING - 1}, returned = 1, pending_person = ${PENDING} where agent_id = ${helper.id}`.execute(
      h.ctx.store.db,
    );
    store = openLoggedStore(h.home);
  }, 60_000);
  afterAll(async () => {
    await store.close();
    await h.close();
  });

  /** The plan lines of every statement `run` issued that reads the inbox. */
  const inboxPlans = async (run: () => Promise<unknown>): Promise<string[][]> => {
    store.statements.length = 0;
    await run();
    const plans = store.statements.filter((s) => /"inbox"/.test(s.sql)).map(store.planOf);
    expect(plans.length).toBeGreaterThan(0);
    return plans;
  };

  /**
   * A plan that walks only pending entries (of one source when `bySource`), in position order,
   * with no sort of its own.
   */
  const expectPendingOnly = (plan: string[], bySource = false) => {
    const inboxLines = plan.filter((d) => /^(SEARCH|SCAN) inbox\b/.test(d));
    expect(inboxLines, plan.join(' | ')).toHaveLength(1);
    expect(inboxLines[0], plan.join(' | ')).toMatch(
      bySource
        ? /USING (COVERING )?INDEX inbox_pending_by_source \(agent_id=\? AND source=\?/
        : /USING (COVERING )?INDEX inbox_pending \(agent_id=\?/,
    );
    for (const line of plan) expect(line, plan.join(' | ')).not.toMatch(/TEMP B-TREE/);
  };

  it("the model's unread page (channel_read) walks pending entries only", async () => {
    let rows: Awaited<ReturnType<typeof pendingMessagesAfter>> = [];
    const plans = await inboxPlans(async () => {
      rows = await pendingMessagesAfter(store.db, helper.id, [channelId], 0, 21);
    });
    for (const plan of plans) expectPendingOnly(plan);
    expect(rows.map((r) => r.key)).toEqual(Array.from({ length: 21 }, (_, i) => HANDLED + 1 + i));
  });

  it("the harness's delivery and the device's queue page walk pending entries only", async () => {
    let entries: Awaited<ReturnType<typeof listInboxEntries>> = [];
    for (const plan of await inboxPlans(async () => {
      entries = await listInboxEntries(store.db, helper.id, { channelIds: [channelId], limit: 10 });
    }))
      expectPendingOnly(plan);
    expect(entries.map((e) => e.position)).toEqual(Array.from({ length: 10 }, (_, i) => HANDLED + 1 + i));
    expect(entries.map((e) => e.state)).toContain('returned');
    // The pending list given explicitly (as `sluice inbox` does) walks the same way.
    for (const plan of await inboxPlans(() =>
      listInboxEntries(store.db, helper.id, {
        channelIds: [channelId],
        states: ['returned', 'waiting'],
        limit: 10,
      }),
    ))
      expectPendingOnly(plan);

    for (const newestFirst of [false, true]) {
      let cards: Awaited<ReturnType<typeof loadCards>> = [];
      for (const plan of await inboxPlans(async () => {
        cards = await loadCards(store.db, {
          agentId: helper.id,
          channelIds: [channelId],
          newestFirst,
          limit: 5,
          headChars: 40,
        });
      }))
        expectPendingOnly(plan);
      const first = newestFirst ? HANDLED + PENDING : HANDLED + 1;
      expect(cards[0]?.position).toBe(first);
      // One source only (the page's person/agent filter): the source's own pending entries.
      for (const plan of await inboxPlans(async () => {
        cards = await loadCards(store.db, {
          agentId: helper.id,
          channelIds: [channelId],
          source: 'person',
          newestFirst,
          limit: 5,
          headChars: 40,
        });
      }))
        expectPendingOnly(plan, true);
      expect(cards[0]?.position).toBe(first);
    }
  });

  it("the newest pending person entry (the page's badge) walks pending entries only", async () => {
    let newest: Awaited<ReturnType<typeof newestPendingPersonEntry>>;
    for (const plan of await inboxPlans(async () => {
      newest = await newestPendingPersonEntry(store.db, helper.id);
    }))
      expectPendingOnly(plan, true);
    expect(newest).toMatchObject({ channel_id: channelId });
  });

  it('one card found by its message id is looked up, not searched for in the history', async () => {
    const newest = await sql<{
      id: string;
    }>`select message_id as id from inbox where agent_id = ${helper.id} order by position desc limit 1`.execute(
      h.ctx.store.db,
    );
    const messageId = (newest.rows[0] as { id: string }).id;
    let position: number | undefined;
    let body: Awaited<ReturnType<typeof queuedBody>>;
    for (const lookup of [
      async () => {
        position = await inboxPositionOf(store.db, helper.id, messageId);
      },
      async () => {
        body = await queuedBody(store.db, helper.id, messageId);
      },
    ]) {
      for (const plan of await inboxPlans(lookup)) {
        const inboxLine = plan.find((d) => /^(SEARCH|SCAN) inbox\b/.test(d)) ?? '';
        // The entry by (agent, message seq), the message by its id: two probes, no walk.
        expect(inboxLine, plan.join(' | ')).toMatch(/\(agent_id=\? AND message_seq=\?\)/);
        for (const line of plan) expect(line, plan.join(' | ')).not.toMatch(/^SCAN /);
      }
    }
    expect(position).toBe(HANDLED + PENDING);
    expect(body).toMatchObject({ state: 'waiting', channel_id: channelId });
  });

  it("the hook's slice (read straight from the file) walks pending entries only", () => {
    const seen: string[] = [];
    const spied = new BetterSqlite3(join(h.home, 'sluice.db'), { readonly: true });
    const prepare = spied.prepare.bind(spied);
    spied.prepare = ((text: string) => {
      seen.push(text);
      return prepare(text);
    }) as typeof spied.prepare;
    try {
      const slice = new PendingReader(spied).pendingSlice('helper', 5);
      expect(slice.candidates).toHaveLength(5);
      expect(slice.totalPending).toBe(PENDING);
      const walks = seen.filter((text) => /from inbox i/.test(text));
      expect(walks.length).toBeGreaterThan(0);
      for (const text of walks) {
        const plan =
          // Every parameter is the agent's id but a limit (EXPLAIN only plans, it runs nothing).
          (
            prepare(`explain query plan ${text}`).all(
              ...Array.from({ length: text.split('?').length - 1 }, () => helper.id),
            ) as { detail: string }[]
          ).map((p) => p.detail.replace(/^(SEARCH|SCAN) i\b/, '$1 inbox'));
        expectPendingOnly(plan);
      }
    } finally {
      spied.close();
    }
  });
});
