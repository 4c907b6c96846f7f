import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readQueuePage } from '../../src/host/device/queue-pages.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { hostilePiece, hostileString } from '../core/arbitraries.js';
import { type Json, openServedHost, type RpcClient, type RpcReply, type ServedHost } from './support.js';

// A small reply budget makes it bind on every page; the rule is the same at 512 KiB.
const REPLY_BYTES = 24 * 1024;
const SUMMARY_BYTES = 8 * 1024;
const MAX_ID_BYTES = 4096;

/** Request ids whose JSON is at most 4 KiB: short hostile ones, numbers, and ones cut right at the limit. */
const requestId = fc.oneof(
  hostileString(20),
  fc.integer(),
  fc.tuple(hostilePiece, fc.integer({ min: 100, max: 4096 })).map(([piece, units]) => {
    let id = piece.repeat(Math.ceil(units / piece.length)).slice(0, units);
    while (Buffer.byteLength(JSON.stringify(id), 'utf8') > MAX_ID_BYTES) id = id.slice(0, -1);
    return id;
  }),
);

/** Bodies from a few characters to tens of KB of hostile text. */
const body = fc.oneof(
  hostileString(200),
  fc.tuple(hostilePiece, fc.integer({ min: 1, max: 20_000 })).map(([piece, n]) => piece.repeat(n)),
);

describe('every reply envelope fits its budget for hostile content (real WebSocket server)', () => {
  let h: ServedHost;
  let owner: RpcClient;
  let channelId: string;

  beforeAll(async () => {
    h = await openServedHost({ limits: { replyBytes: REPLY_BYTES } });
    await h.agent('helper');
    owner = await h.client();
    channelId = (await owner.ok('channel.create', { name: 'ops', members: ['helper'] })).id;
    await owner.ok('subscribe', { channels: [channelId], queues: ['helper'] });
  });
  afterAll(async () => h.close());

  function expectWithin(reply: RpcReply, id: unknown, budget = REPLY_BYTES) {
    expect(reply.bytes).toBeLessThanOrEqual(budget);
    expect(reply.error).toBeUndefined();
    expect(reply.id).toEqual(id);
  }

  it('pages, body parts, history and summaries stay within budget and echo the id', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ body, subject: fc.option(hostileString(300), { nil: undefined }) }), {
          minLength: 1,
          maxLength: 3,
        }),
        requestId,
        fc.integer({ min: 1, max: 200 }),
        async (messages, id, size) => {
          const sentIds: string[] = [];
          for (const m of messages) {
            const reply = await owner.call(
              'message.send',
              { to: channelId, body: m.body, subject: m.subject },
              id,
            );
            if (reply.error?.data.code === 'invalid_params') continue; // e.g. a body of only whitespace
            expectWithin(reply, id);
            sentIds.push(reply.result.message_id);
          }

          const summary = await owner.call('queue.summary', { agent: 'helper' }, id);
          expectWithin(summary, id, SUMMARY_BYTES);

          // Walk the whole queue forward: every page within budget, every card exactly once.
          const seen: string[] = [];
          let cursor: string | undefined;
          for (;;) {
            const params: Json = { agent: 'helper', size, ...(cursor ? { cursor } : {}) };
            const page = await owner.call('queue.page', params, id);
            expectWithin(page, id);
            expect(page.result.status).toBe('page');
            for (const row of page.result.rows) {
              expect(Buffer.byteLength(row.preview, 'utf8')).toBeLessThanOrEqual(512);
              seen.push(row.messageId);
            }
            if (page.result.nextCursor === null) break;
            cursor = page.result.nextCursor;
          }
          expect(new Set(seen).size).toBe(seen.length);
          expect(seen.length).toBe(summary.result.total);

          for (const messageId of sentIds) {
            const stored = await h.ctx.store.db
              .selectFrom('messages')
              .select('body')
              .where('id', '=', messageId)
              .executeTakeFirstOrThrow();
            const parts: string[] = [];
            let partCursor: string | undefined;
            for (;;) {
              const read = await owner.call(
                'queue.read',
                { agent: 'helper', messageId, ...(partCursor ? { cursor: partCursor } : {}) },
                id,
              );
              expectWithin(read, id);
              parts.push(read.result.part.text);
              if (read.result.nextCursor === null) break;
              partCursor = read.result.nextCursor;
            }
            expect(parts.join('')).toBe(stored.body);
          }

          let historyCursor: string | undefined;
          for (let pages = 0; pages < 3; pages++) {
            const history = await owner.call(
              'channel.history',
              { channelId, size, ...(historyCursor ? { cursor: historyCursor } : {}) },
              id,
            );
            expectWithin(history, id);
            if (history.result.nextCursor === null) break;
            historyCursor = history.result.nextCursor;
          }

          // Errors fit too, and still echo the id.
          const refused = await owner.call('queue.page', { agent: 'helper', cursor: 'bogus', size }, id);
          expect(refused.bytes).toBeLessThanOrEqual(REPLY_BYTES);
          expect(refused.id).toEqual(id);
          expect(refused.error?.code).toBe(-32010);

          // Live notifications are bounded too: every message heard, each frame within budget.
          for (const messageId of sentIds) {
            await owner.waitFor(
              (n) => n.method === 'channel.message' && n.params.message.messageId === messageId,
            );
          }
          for (const n of owner.notifications) {
            const limit = n.method === 'queue.changed' ? SUMMARY_BYTES : REPLY_BYTES;
            expect(Buffer.byteLength(n.raw, 'utf8')).toBeLessThanOrEqual(limit);
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it('refuses an id over 4 KiB with id null instead of echoing it', async () => {
    const id = '😀'.repeat(1100);
    const reply = await owner.sendRaw(JSON.stringify({ jsonrpc: '2.0', id, method: 'host.hello' }), null);
    expect(reply.error).toMatchObject({ code: -32600, data: { code: 'invalid_request' } });
    expect(reply.id).toBeNull();
  });
});

describe('an around page under a tight budget', () => {
  it('drops earlier rows first so the anchor is always on the page', async () => {
    const h = await openServedHost();
    try {
      await h.agent('helper');
      const ids: string[] = [];
      for (let i = 0; i < 9; i++)
        ids.push(
          (await sendMessage(h.ctx, h.owner, { to: 'helper', body: `${i} ${'é'.repeat(200)}` })).message_id,
        );
      const full = await readQueuePage(
        h.ctx,
        h.owner,
        { agent: 'helper', around: ids[4] as string, size: 9 },
        512 * 1024,
      );
      const budget = Math.floor(Buffer.byteLength(full.text, 'utf8') / 3);
      const tight = await readQueuePage(
        h.ctx,
        h.owner,
        { agent: 'helper', around: ids[4] as string, size: 9 },
        budget,
      );
      expect(Buffer.byteLength(tight.text, 'utf8')).toBeLessThanOrEqual(budget);
      if (tight.value.status !== 'page') throw new Error('expected a page');
      const rows = tight.value.rows.map((r) => r.messageId);
      expect(rows).toContain(ids[4]);
      expect(rows.length).toBeLessThan(9);
      expect(tight.value.hasMore).toEqual({ before: true, after: true });
      expect(ids.join(',')).toContain(rows.join(','));
    } finally {
      await h.close();
    }
  });
});

describe('a first card that alone does not fit', () => {
  it('is sent with optional fields dropped and truncated:true, and the page still fits', async () => {
    const h = await openServedHost();
    try {
      await h.agent('helper');
      await sendMessage(h.ctx, h.owner, { to: 'helper', body: '\u0001'.repeat(600) });
      await sendMessage(h.ctx, h.owner, { to: 'helper', body: 'second' });
      const full = await readQueuePage(h.ctx, h.owner, { agent: 'helper' }, 512 * 1024);
      const budget = Buffer.byteLength(full.text, 'utf8') - 3000;
      const tight = await readQueuePage(h.ctx, h.owner, { agent: 'helper' }, budget);
      expect(Buffer.byteLength(tight.text, 'utf8')).toBeLessThanOrEqual(budget);
      expect(tight.value).toMatchObject({ status: 'page', hasMore: { after: true } });
      if (tight.value.status !== 'page') throw new Error('expected a page');
      expect(tight.value.rows).toHaveLength(1);
      expect(tight.value.rows[0]).toMatchObject({
        preview: '',
        senderLabels: [],
        truncated: true,
        bodyBytes: 600,
      });
      const next = await readQueuePage(
        h.ctx,
        h.owner,
        { agent: 'helper', cursor: tight.value.nextCursor as string },
        budget,
      );
      expect(next.value.status === 'page' && next.value.rows.map((r) => r.preview)).toEqual(['second']);
    } finally {
      await h.close();
    }
  });
});
