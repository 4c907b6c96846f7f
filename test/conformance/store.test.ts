import BetterSqlite3 from 'better-sqlite3';
import fc from 'fast-check';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSluiceError } from '../../src/core/errors.js';
import { createChannel, removeMember } from '../../src/host/channels.js';
import { archiveMessages, listInbox } from '../../src/host/inbox.js';
import { putMedia, readMediaBytes } from '../../src/host/media.js';
import { readProjection, sendMessage } from '../../src/host/messages.js';
import type { Principal } from '../../src/host/principals.js';
import { pauseQueue, queueSummary, resumeQueue, withdrawMessage } from '../../src/host/queue.js';
import { channelRead, channelSearch, type PageResult } from '../../src/host/reads.js';
import { beginTurn, endTurn, receivedInProcess } from '../../src/host/turns/index.js';
import { listPrincipals } from '../../src/store/ops/principals.js';
import type { Database } from '../../src/store/schema.js';
import { dialectOf } from '../../src/store/store.js';
import { hostileId, hostileString } from '../core/arbitraries.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from './backend.js';

/** The inbox rows of an agent, in position order. */
async function inboxRows(h: ConformanceHost, agent: Principal) {
  return h.ctx.store.db
    .selectFrom('inbox')
    .selectAll()
    .where('agent_id', '=', agent.id)
    .orderBy('position')
    .execute();
}

/** The maintained counters must always equal what the rows say. */
async function expectCountersMatchRows(h: ConformanceHost, agent: Principal) {
  const summary = await queueSummary(h.ctx.store.db, agent);
  const pending = (await inboxRows(h, agent)).filter((r) => r.state === 'waiting' || r.state === 'returned');
  expect(summary.total).toBe(pending.length);
  expect(summary.counts).toEqual({
    person: pending.filter((r) => r.source === 'person').length,
    agent: pending.filter((r) => r.source === 'agent').length,
    unknown: pending.filter((r) => r.source === 'unknown').length,
  });
}

/** Lone surrogates replaced by U+FFFD (what a UTF-8 store can hold). */
function wellFormed(text: string): string {
  return text.replace(/[\ud800-\udfff]/gu, '\ufffd');
}

describe.each(backendsUnderTest())('store and host conformance on %s', (backend) => {
  let h: ConformanceHost;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'store');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
  });
  afterEach(async () => {
    await h?.close();
  });

  /**
   * A second writer for concurrency tests. On PostgreSQL, another store (its own pool) racing this
   * one. On SQLite, better-sqlite3 is synchronous: a second connection in the same process would
   * block the event loop in busy_timeout while the first holds the lock, so same-process writers
   * share the one connection (Kysely queues them); cross-process SQLite writers are covered by
   * test/conformance/multihost.test.ts.
   */
  const concurrentPeer = () => (backend === 'postgres' ? h.sibling() : Promise.resolve(h.ctx));

  describe('send', () => {
    it('fans a message out to every agent member but its author, in FIFO positions, and never to people', async () => {
      const a = await h.agent('a');
      const b = await h.agent('b');
      const alice = await h.person('alice');
      await createChannel(h.ctx, h.owner, { name: 'team', members: ['a', 'b', 'alice'] });
      const first = await sendMessage(h.ctx, a, { to: '#team', body: 'from a' });
      const second = await sendMessage(h.ctx, alice, { to: '#team', body: 'from alice' });
      expect(second.seq).toBeGreaterThan(first.seq);
      expect((await listInbox(h.ctx, a)).map((r) => r.projection.body)).toEqual(['from alice']);
      const bRows = await inboxRows(h, b);
      expect(bRows.map((r) => [r.position, r.message_id, r.source])).toEqual([
        [1, first.message_id, 'agent'],
        [2, second.message_id, 'person'],
      ]);
      expect(await inboxRows(h, alice)).toEqual([]);
      await expectCountersMatchRows(h, b);
    });

    it('gives concurrent senders on two connections gapless, duplicate-free positions', async () => {
      const bot = await h.agent('bot');
      const other = await concurrentPeer();
      const sends = [];
      for (let i = 0; i < 30; i++) {
        sends.push(sendMessage(h.ctx, h.owner, { to: 'bot', body: `h${i}` }));
        sends.push(sendMessage(other, h.owner, { to: 'bot', body: `s${i}` }));
      }
      const sent = await Promise.all(sends);
      const rows = await inboxRows(h, bot);
      expect(rows.map((r) => r.position)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
      expect(new Set(rows.map((r) => r.message_id))).toEqual(new Set(sent.map((s) => s.message_id)));
      // Every acknowledged id appears exactly once.
      expect(rows).toHaveLength(new Set(rows.map((r) => r.message_id)).size);
      await expectCountersMatchRows(h, bot);
    });

    it('refuses a send to a channel the sender left and stores nothing', async () => {
      await h.agent('bot');
      const carol = await h.person('carol');
      const channel = await createChannel(h.ctx, h.owner, { name: 'ops', members: ['bot', 'carol'] });
      await removeMember(h.ctx, h.owner, channel.id, 'carol');
      const before = await h.ctx.store.db.selectFrom('messages').select('seq').execute();
      await expect(sendMessage(h.ctx, carol, { to: '#ops', body: 'hi' })).rejects.toMatchObject({
        code: 'not_member',
      });
      expect(await h.ctx.store.db.selectFrom('messages').select('seq').execute()).toEqual(before);
    });
  });

  it('carries its dialect on every handle the ops get: the root, a transaction and a send', async () => {
    const dialect = dialectOf(h.ctx.store.db);
    expect(await h.ctx.store.transaction(async (trx) => dialectOf(trx))).toBe(dialect);
    for (const oneStatement of [false, true])
      expect(await h.ctx.store.sendTransaction(async (db) => dialectOf(db), { oneStatement })).toBe(dialect);
    expect(dialect.locksRowsRead).toBe(backend === 'postgres');
  });

  it('lists names in byte order, whatever the database collation', async () => {
    for (const name of ['alice', 'Bob', '9lives', 'Zed', 'bob', 'a.b', 'a-b', 'a_b']) await h.person(name);
    const names = (await listPrincipals(h.ctx.store.db)).map((p) => p.name);
    expect(names).toEqual([...names].sort());
    expect(names.indexOf('Zed')).toBeLessThan(names.indexOf('alice'));
  });

  describe('archive', () => {
    it('writes one receipt per id, repeats report already, and unknown ids change nothing', async () => {
      const bot = await h.agent('bot');
      const m1 = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'one' });
      const m2 = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'two' });
      const first = await archiveMessages(h.ctx, bot, [m1.message_id, m1.message_id]);
      expect(first.map((r) => r.already)).toEqual([false, true]);
      const again = await archiveMessages(h.ctx, bot, [m1.message_id]);
      expect(again[0]).toMatchObject({ already: true, archivedAt: first[0]?.archivedAt });
      await expect(archiveMessages(h.ctx, bot, [m2.message_id, 'nope'])).rejects.toMatchObject({
        code: 'not_found',
      });
      expect((await listInbox(h.ctx, bot)).map((r) => r.projection.message_id)).toEqual([m2.message_id]);
      const receipts = await h.ctx.store.db.selectFrom('receipts').selectAll().execute();
      expect(receipts.map((r) => r.message_id)).toEqual([m1.message_id]);
      await expectCountersMatchRows(h, bot);
    });

    it('archives each entry exactly once when two connections archive the same ids at once', async () => {
      const bot = await h.agent('bot');
      const other = await concurrentPeer();
      const ids: string[] = [];
      for (let i = 0; i < 12; i++)
        ids.push((await sendMessage(h.ctx, h.owner, { to: 'bot', body: `m${i}` })).message_id);
      const reversed = [...ids].reverse();
      const results = await Promise.all([
        archiveMessages(h.ctx, bot, ids),
        archiveMessages(other, bot, reversed),
        archiveMessages(h.ctx, bot, ids.slice(0, 6)),
        archiveMessages(other, bot, ids.slice(6)),
      ]);
      const created = results.flat().filter((r) => !r.already);
      expect(created.map((r) => r.id).sort()).toEqual([...ids].sort());
      expect(await h.ctx.store.db.selectFrom('receipts').select('message_id').execute()).toHaveLength(12);
      expect((await inboxRows(h, bot)).every((r) => r.state === 'archived')).toBe(true);
      await expectCountersMatchRows(h, bot);
    });
  });

  describe('turns and settlement', () => {
    it('consumes only what a successful turn received whole, and returns it on failure', async () => {
      const bot = await h.agent('bot', 'turn');
      const m1 = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'read me' });
      const peek = (await channelRead(h.ctx, bot, { unread: true })).value as PageResult;
      expect(peek.messages.map((m) => m.message_id)).toEqual([m1.message_id]);
      expect((await queueSummary(h.ctx.store.db, bot)).total).toBe(1);

      const failing = await beginTurn(h.ctx, bot);
      await receivedInProcess(h.ctx, await channelRead(h.ctx, bot, { unread: true }));
      const failed = await endTurn(h.ctx, bot, failing.id, {
        ok: false,
        kind: 'model_error',
        reason: 'boom',
      });
      expect(failed.returned).toEqual([m1.message_id]);
      const blocked = await queueSummary(h.ctx.store.db, bot);
      expect(blocked).toMatchObject({
        total: 1,
        blockingReturnedMessageId: m1.message_id,
        resumeAvailable: true,
      });

      await resumeQueue(h.ctx, h.owner, 'bot', m1.message_id);
      const m2 = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'later' });
      const turn = await beginTurn(h.ctx, bot);
      await receivedInProcess(h.ctx, await channelRead(h.ctx, bot, { unread: true, limit: 1 }));
      const settled = await endTurn(h.ctx, bot, turn.id, { ok: true });
      expect(settled.handled).toEqual([m1.message_id]);
      expect((await listInbox(h.ctx, bot)).map((r) => r.projection.message_id)).toEqual([m2.message_id]);
      expect(await h.ctx.store.db.selectFrom('coverage').selectAll().execute()).toEqual([]);
      await expectCountersMatchRows(h, bot);
    });

    it('abandons a turn left open when the next one begins, consuming nothing', async () => {
      const bot = await h.agent('bot', 'turn');
      const m1 = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'x' });
      const stale = await beginTurn(h.ctx, bot, { owner: 'dead-host:1' });
      await receivedInProcess(h.ctx, await channelRead(h.ctx, bot, { unread: true }));
      const fresh = await beginTurn(h.ctx, bot);
      const turns = await h.ctx.store.db
        .selectFrom('turns')
        .select(['id', 'state'])
        .orderBy('started_at')
        .execute();
      expect(turns.find((t) => t.id === stale.id)?.state).toBe('abandoned');
      expect(await endTurn(h.ctx, bot, fresh.id, { ok: true })).toMatchObject({ handled: [] });
      expect((await listInbox(h.ctx, bot)).map((r) => r.projection.message_id)).toEqual([m1.message_id]);
    });
  });

  describe('queue steering', () => {
    it('keeps the summary counters in step through pause, withdraw and resume', async () => {
      const bot = await h.agent('bot');
      const peer = await h.agent('peer');
      await createChannel(h.ctx, h.owner, { name: 'pair', members: ['bot', 'peer'] });
      const fromPerson = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'p1' });
      await sendMessage(h.ctx, peer, { to: '#pair', body: 'a1' });
      const last = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'p2' });
      let summary = await queueSummary(h.ctx.store.db, bot);
      expect(summary).toMatchObject({ total: 3, counts: { person: 2, agent: 1, unknown: 0 }, paused: false });
      expect(summary.newestPersonMessageId).toBe(last.message_id);

      await pauseQueue(h.ctx, h.owner, 'bot', 'lunch');
      expect((await queueSummary(h.ctx.store.db, bot)).paused).toBe(true);
      await withdrawMessage(h.ctx, h.owner, 'bot', last.message_id);
      await expect(withdrawMessage(h.ctx, h.owner, 'bot', last.message_id)).rejects.toMatchObject({
        code: 'conflict',
      });
      await resumeQueue(h.ctx, h.owner, 'bot');
      summary = await queueSummary(h.ctx.store.db, bot);
      expect(summary).toMatchObject({ total: 2, counts: { person: 1, agent: 1, unknown: 0 }, paused: false });
      expect(summary.newestPersonMessageId).toBe(fromPerson.message_id);
      expect(summary.revision).toBeGreaterThan(3);
      await expectCountersMatchRows(h, bot);
    });
  });

  describe('search', () => {
    it('finds whole terms newest first, only in channels the caller belongs to, paging by cursor', async () => {
      const bot = await h.agent('bot');
      await h.agent('spy');
      await createChannel(h.ctx, h.owner, { name: 'mine', members: ['bot'] });
      await createChannel(h.ctx, h.owner, { name: 'secret', members: ['spy'] });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          (await sendMessage(h.ctx, h.owner, { to: '#mine', body: `deploy ＃${i} of the 中文 release` }))
            .message_id,
        );
      }
      await sendMessage(h.ctx, h.owner, { to: '#secret', body: 'deploy the secret release' });
      await sendMessage(h.ctx, h.owner, { to: '#mine', body: 'unrelated words', subject: 'Deploy notes' });
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 10; page++) {
        const result = (await channelSearch(h.ctx, bot, { query: 'DEPLOY release', limit: 2, cursor })).value;
        seen.push(...result.messages.map((m) => m.message_id));
        if (result.nextCursor === null) break;
        cursor = result.nextCursor;
      }
      expect(seen).toEqual([...ids].reverse());
      const bySubject = (await channelSearch(h.ctx, bot, { query: 'notes' })).value;
      expect(bySubject.messages.map((m) => m.subject)).toEqual(['Deploy notes']);
      expect((await channelSearch(h.ctx, bot, { query: '中文' })).value.messages).toHaveLength(5);
    });

    it('treats any query text as plain words, never as search syntax', async () => {
      const bot = await h.agent('bot');
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'a "quoted" & (grouped) body' });
      await fc.assert(
        fc.asyncProperty(hostileString(30), async (query) => {
          try {
            await channelSearch(h.ctx, bot, { query });
          } catch (err) {
            // Only the documented validation (empty query) may refuse it: never a database error.
            expect(isSluiceError(err) && err.code === 'invalid_params').toBe(true);
          }
        }),
        { numRuns: 40 },
      );
      expect((await channelSearch(h.ctx, bot, { query: '"quoted" & (grouped' })).value.messages).toHaveLength(
        1,
      );
    });
  });

  describe('budgets and cursors', () => {
    it('walks an unread cursor chain over hostile bodies: every message once, in FIFO order, every page within budget', async () => {
      const bot = await h.agent('bot');
      const other = await h.agent('other');
      const budget = h.ctx.limits.toolOutputUnits;
      const sent: string[] = [];
      const bodies = fc.sample(hostileString(400), { numRuns: 24, seed: 7 }).map(wellFormed);
      bodies.push('😀'.repeat(budget), `"\\\u0000`.repeat(budget / 2));
      for (const body of bodies) {
        if (body.trim() === '') continue;
        sent.push((await sendMessage(h.ctx, h.owner, { to: 'bot', body })).message_id);
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const outcome = await channelRead(h.ctx, bot, { unread: true, limit: 7, cursor });
        expect(outcome.text.length).toBeLessThanOrEqual(budget);
        const value = outcome.value as PageResult;
        seen.push(...value.messages.map((m) => m.message_id));
        if (value.readContent) seen.push(value.readContent.message_id);
        if (value.nextCursor === null) break;
        cursor = value.nextCursor;
        // A cursor is bound to its caller: another agent cannot use it.
        if (page === 0) {
          await expect(channelRead(h.ctx, other, { unread: true, cursor })).rejects.toMatchObject({
            code: 'invalid_cursor',
          });
        }
      }
      expect(seen).toEqual(sent);
    });
  });

  describe('media', () => {
    it('serves uploaded bytes to channel members from any host and hides them from others', async () => {
      const bot = await h.agent('bot');
      const outsider = await h.agent('outsider');
      const bytes = new Uint8Array(70_000).map((_, i) => (i * 7) % 256);
      const ref = await putMedia(h.ctx, h.owner, bytes, '../evil\u0000name.bin');
      expect(ref.name).toBe('evilname.bin');
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'see file', attachmentIds: [ref.attachment_id] });
      const other = await h.sibling();
      const read = await readMediaBytes(other, bot, ref.attachment_id);
      expect(Buffer.from(read.bytes).equals(Buffer.from(bytes))).toBe(true);
      await expect(readMediaBytes(h.ctx, outsider, ref.attachment_id)).rejects.toMatchObject({
        code: 'not_found',
      });
      // The same bytes uploaded twice are stored once.
      await putMedia(h.ctx, h.owner, bytes, 'again.bin');
      const blobs = await h.ctx.store.blobs.list();
      expect(blobs.map((b) => b.size)).toEqual([70_000]);
      expect(await h.ctx.store.blobs.has(read.media.sha256)).toBe(true);
    });
  });

  describe('several processes on one database', () => {
    it('share one cursor secret, so a cursor from one host pages on another', async () => {
      const bot = await h.agent('bot');
      for (let i = 0; i < 3; i++) await sendMessage(h.ctx, h.owner, { to: 'bot', body: `m${i}` });
      const other = await h.sibling();
      expect(Buffer.from(other.cursorSecret).equals(Buffer.from(h.ctx.cursorSecret))).toBe(true);
      const first = (await channelRead(h.ctx, bot, { unread: true, limit: 1 })).value as PageResult;
      const next = (
        await channelRead(other, bot, { unread: true, limit: 2, cursor: first.nextCursor as string })
      ).value as PageResult;
      expect(next.messages.map((m) => m.body)).toEqual(['m1', 'm2']);
    });

    it("tells a watcher about another process's commit", async () => {
      const bot = await h.agent('bot');
      const other = await h.sibling();
      let changes = 0;
      const stop = h.ctx.store.watchChanges(() => changes++);
      try {
        // The watcher needs a moment to start listening (LISTEN) or to take its first reading.
        await new Promise((r) => setTimeout(r, 300));
        changes = 0;
        await sendMessage(other, h.owner, { to: 'bot', body: 'from elsewhere' });
        await expect.poll(() => changes, { timeout: 5000 }).toBeGreaterThan(0);
      } finally {
        stop();
      }
      expect((await listInbox(h.ctx, bot)).map((r) => r.projection.body)).toEqual(['from elsewhere']);
    });
  });

  describe('hostile content', () => {
    it('refuses archives naming hostile unknown ids (NUL, 10 KB) with one code and changes nothing', async () => {
      const bot = await h.agent('bot');
      const real = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'keep me' });
      const before = await queueSummary(h.ctx.store.db, bot);
      await fc.assert(
        fc.asyncProperty(hostileId, async (id) => {
          fc.pre(id !== real.message_id);
          const err = await archiveMessages(h.ctx, bot, [real.message_id, id]).catch((e: unknown) => e);
          expect(isSluiceError(err) && ['not_found', 'invalid_params'].includes(err.code)).toBe(true);
        }),
        { numRuns: 25 },
      );
      expect(await queueSummary(h.ctx.store.db, bot)).toEqual(before);
      expect(await h.ctx.store.db.selectFrom('receipts').selectAll().execute()).toEqual([]);
    });

    it('stores a 2 MB body with a 10 KB word and still finds it by an early term', async () => {
      const bot = await h.agent('bot');
      const body = `needle ${'😀中文\u0000"\\ '.repeat(150_000)} ${'w'.repeat(10_240)} tail`;
      const sent = await sendMessage(h.ctx, h.owner, { to: 'bot', body });
      expect((await readProjection(h.ctx, h.owner, sent.message_id)).body).toBe(body);
      const found = (await channelSearch(h.ctx, bot, { query: 'needle' })).value;
      expect(found.messages.length + (found.readContent ? 1 : 0)).toBeGreaterThan(0);
    });

    it('stores and returns any well-formed body and subject exactly (NUL, emoji, escapes)', async () => {
      await h.agent('bot');
      await fc.assert(
        fc.asyncProperty(
          hostileString(60).map(wellFormed),
          fc.option(hostileString(20).map(wellFormed), { nil: undefined }),
          async (body, subject) => {
            fc.pre(body.trim() !== '');
            // Lone surrogates are refused before storage (test/conformance/exact-text.test.ts).
            const sent = await sendMessage(h.ctx, h.owner, { to: 'bot', body, subject });
            const projection = await readProjection(h.ctx, h.owner, sent.message_id);
            expect(projection.body).toBe(body);
            expect(projection.subject).toBe(subject);
          },
        ),
        { numRuns: 60 },
      );
    });
  });
});

describe('the store dialect', () => {
  it('is refused, with a line that says why, on a handle not opened as a Sluice store', async () => {
    const db = new Kysely<Database>({
      dialect: new SqliteDialect({ database: new BetterSqlite3(':memory:') }),
    });
    try {
      expect(() => dialectOf(db)).toThrow('this database handle was not opened as a Sluice store');
    } finally {
      await db.destroy();
    }
  });
});
