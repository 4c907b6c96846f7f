import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sendMessage } from '../../src/host/messages/messages.js';
import { lastEventSeq, listEventsAfter } from '../../src/store/ops/events.js';
import { eventsHeldBack } from '../../src/store/postgres/commit-order.js';
import { WRITE_LOCK_CLASS } from '../../src/store/postgres/migrations.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries, PG_BASE_URL } from './backend.js';

// PostgreSQL sends commit in parallel: event seqs are taken in one order and committed in
// another. These cases hold two transactions open by hand to force every interleaving.
describe.runIf(backendsUnderTest().includes('postgres'))('event log in commit order on postgres', () => {
  let h: ConformanceHost;
  const clients: pg.Client[] = [];
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries('postgres', 'order');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.end();
    await h.close();
  });

  /**
   * A connection of its own in the host's schema, with a transaction open that acts as a Sluice
   * writer: it takes the schema's write lock (shared, like a send) before its first write.
   */
  async function openTransaction(): Promise<pg.Client> {
    const client = await connectTo(PG_BASE_URL);
    await client.query('begin');
    await client.query('select pg_advisory_xact_lock_shared($1, hashtext(current_schema()))', [
      WRITE_LOCK_CLASS,
    ]);
    return client;
  }

  async function connectTo(url: string): Promise<pg.Client> {
    const schema = new URL(h.db as string).searchParams.get('schema') as string;
    const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    clients.push(client);
    await client.connect();
    return client;
  }

  async function appendEvent(client: pg.Client, kind: string): Promise<number> {
    const r = await client.query<{ seq: string }>(
      `insert into events (kind, created_at) values ($1, '2030-01-01T00:00:00Z') returning seq`,
      [kind],
    );
    return Number(r.rows[0]?.seq);
  }

  const kinds = async (after: number) =>
    (await listEventsAfter(h.ctx.store.db, after, 100)).map((e) => e.kind);

  it('never skips an event whose lower seq commits after a higher one was read', async () => {
    const start = await lastEventSeq(h.ctx.store.db);
    const older = await openTransaction();
    const newer = await openTransaction();
    await older.query(`insert into meta (key, value) values ('first write', 'x')`); // older's xid first
    const low = await appendEvent(newer, 'low seq');
    const high = await appendEvent(older, 'high seq');
    expect(low).toBeLessThan(high);
    await newer.query('commit');
    // The older transaction still runs: the newer one's event waits behind it.
    expect(await kinds(start)).toEqual([]);
    expect(await eventsHeldBack(h.ctx.store.db)).toBe(true);
    await older.query('commit');
    // Commit order: the older transaction first, though its seq is the higher one. (Polled: the
    // bound also waits, for one read, on a transaction of another test's schema ending meanwhile.)
    await expect.poll(() => kinds(start)).toEqual(['high seq', 'low seq']);
    await expect.poll(() => eventsHeldBack(h.ctx.store.db)).toBe(false);
    // A reader that stopped after the high seq (the old `seq > N` cursor would skip `low`).
    expect(await kinds(high)).toEqual(['low seq']);
    expect(await kinds(low)).toEqual([]);
    expect(await lastEventSeq(h.ctx.store.db)).toBe(low);
  });

  it("is not held back by another application's open transaction, in this database or another", async () => {
    // Review finding: the bound was the server's oldest running transaction, so an idle-in-
    // transaction session of anything else on the server stalled every live feed while it stayed open.
    const bot = await h.agent('bot');
    await sendMessage(h.ctx, h.owner, { to: bot.name, body: 'the DM exists' });
    const here = await connectTo(PG_BASE_URL);
    const elsewhere = new URL(PG_BASE_URL);
    elsewhere.pathname = '/postgres';
    const there = await connectTo(elsewhere.toString());
    for (const other of [here, there]) {
      await other.query('begin');
      await other.query('select pg_current_xact_id()'); // holds an xid, and keeps it open
    }
    const start = await lastEventSeq(h.ctx.store.db);
    await sendMessage(h.ctx, h.owner, { to: bot.name, body: 'not held back' });
    await expect.poll(() => kinds(start)).toContain('message.created');
    await expect.poll(() => eventsHeldBack(h.ctx.store.db)).toBe(false);
    // A Sluice writer of this schema that started before does hold it back, until it ends.
    const writer = await openTransaction();
    await writer.query(`insert into meta (key, value) values ('writer', 'x')`);
    const mid = await lastEventSeq(h.ctx.store.db);
    await sendMessage(h.ctx, h.owner, { to: bot.name, body: 'behind the writer' });
    expect(await kinds(mid)).toEqual([]);
    expect(await eventsHeldBack(h.ctx.store.db)).toBe(true);
    await writer.query('rollback');
    await expect.poll(() => kinds(mid)).toContain('message.created');
    for (const other of [here, there]) await other.query('rollback');
  });

  it('tells watchers again when an older transaction that announced nothing commits', async () => {
    let told = 0;
    // Set by a watcher call that finds the held-back send readable: only a call after the
    // blocker's commit can (review: counting calls alone passed without that re-announcement).
    let start = Number.POSITIVE_INFINITY;
    let sawSend = false;
    const stop = h.ctx.store.watchChanges(() => {
      told++;
      if (!Number.isFinite(start)) return;
      void kinds(start).then(
        (k) => {
          if (k.includes('message.created')) sawSend = true;
        },
        () => {}, // a read racing the test's end: the assertion below decides
      );
    });
    try {
      const bot = await h.agent('bot');
      await sendMessage(h.ctx, h.owner, { to: bot.name, body: 'the DM exists' });
      start = await lastEventSeq(h.ctx.store.db);
      const blocker = await openTransaction();
      await blocker.query(`insert into meta (key, value) values ('no event', 'x')`);
      await sendMessage(h.ctx, h.owner, { to: bot.name, body: 'held back' });
      expect(await kinds(start)).toEqual([]);
      await waitFor(() => told > 0);
      expect(sawSend).toBe(false);
      await blocker.query('commit'); // appends no event: no notification of its own
      await waitFor(() => sawSend);
    } finally {
      stop();
    }
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a notification');
    await new Promise((r) => setTimeout(r, 10));
  }
}
