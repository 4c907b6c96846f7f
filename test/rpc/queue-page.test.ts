import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedQueueCards } from '../../bench/queue.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { transitionEntry } from '../../src/host/queue/inbox.js';
import { withdrawMessage } from '../../src/host/queue/queue.js';
import { findInboxEntry } from '../../src/store/ops/inbox.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { type Json, openServedHost, type RpcClient, type ServedHost } from './support.js';

const CARDS = 1_001;

describe('queue.page over the WebSocket', () => {
  let h: ServedHost;
  let owner: RpcClient;
  let helper: Principal;
  let allIds: string[];

  beforeAll(async () => {
    h = await openServedHost();
    helper = await h.agent('helper');
    // Every card has the same timestamp: order must come from the position keyset alone.
    await seedQueueCards(h.ctx, helper, h.owner, CARDS, '2026-05-05T05:05:05.000Z');
    const rows = await h.ctx.store.db
      .selectFrom('inbox')
      .select('message_id')
      .where('agent_id', '=', helper.id)
      .orderBy('position')
      .execute();
    allIds = rows.map((r) => r.message_id);
    owner = await h.client();
  }, 60_000);
  afterAll(async () => h.close());

  async function page(params: Json) {
    const reply = await owner.call('queue.page', { agent: 'helper', ...params });
    expect(reply.error).toBeUndefined();
    expect(reply.bytes).toBeLessThanOrEqual(512 * 1024);
    return reply.result;
  }

  it('walks nextCursor forward and previousCursor back over 1,001 tied cards, reaching every row in order', async () => {
    const forward: string[] = [];
    let result = await page({ size: 37 });
    expect(result.hasMore.before).toBe(false);
    expect(result.previousCursor).toBeNull();
    forward.push(...result.rows.map((r: Json) => r.messageId));
    while (result.nextCursor !== null) {
      result = await page({ size: 37, cursor: result.nextCursor });
      expect(result.status).toBe('page');
      forward.push(...result.rows.map((r: Json) => r.messageId));
    }
    expect(result.hasMore.after).toBe(false);
    expect(forward).toEqual(allIds);

    const backward: string[][] = [result.rows.map((r: Json) => r.messageId)];
    while (result.previousCursor !== null) {
      result = await page({ size: 37, cursor: result.previousCursor });
      expect(result.status).toBe('page');
      backward.unshift(result.rows.map((r: Json) => r.messageId));
    }
    expect(result.hasMore.before).toBe(false);
    expect(backward.flat()).toEqual(allIds);
  });

  it('centres a page on the around anchor and continues both ways from it', async () => {
    const anchor = allIds[500] as string;
    const result = await page({ around: anchor, size: 9 });
    const ids = result.rows.map((r: Json) => r.messageId);
    expect(ids).toEqual(allIds.slice(496, 505));
    expect(result.hasMore).toEqual({ before: true, after: true });
    const before = await page({ cursor: result.previousCursor, size: 9 });
    expect(before.rows.map((r: Json) => r.messageId)).toEqual(allIds.slice(487, 496));
    const after = await page({ cursor: result.nextCursor, size: 9 });
    expect(after.rows.map((r: Json) => r.messageId)).toEqual(allIds.slice(505, 514));
  });

  it('anchors at the very first and very last card without inventing rows', async () => {
    const first = await page({ around: allIds[0], size: 5 });
    expect(first.rows.map((r: Json) => r.messageId)).toEqual(allIds.slice(0, 5));
    expect(first.hasMore.before).toBe(false);
    const last = await page({ around: allIds[CARDS - 1], size: 5 });
    expect(last.rows.map((r: Json) => r.messageId)).toEqual(allIds.slice(CARDS - 5));
    expect(last.hasMore.after).toBe(false);
  });

  it('rows carry the §3.3 fields with a short preview and the sender label', async () => {
    const result = await page({ size: 1 });
    expect(result.rows[0]).toEqual({
      messageId: allIds[0],
      channelId: expect.any(String),
      position: expect.any(Number),
      state: 'waiting',
      source: 'person',
      senderLabels: ['owner'],
      senderCount: 1,
      preview: 'card 1',
      truncated: false,
      bodyBytes: 6,
      createdAt: '2026-05-05T05:05:05.000Z',
      attachmentCount: 0,
    });
  });

  it('a card says how many attachments its message carries', async () => {
    await h.agent('filer');
    const files = [
      await putMedia(h.ctx, h.owner, new TextEncoder().encode('one'), 'a.txt'),
      await putMedia(h.ctx, h.owner, new TextEncoder().encode('two'), 'b.txt'),
    ];
    await sendMessage(h.ctx, h.owner, {
      to: 'filer',
      body: 'two files',
      attachmentIds: files.map((f) => f.attachment_id),
    });
    await sendMessage(h.ctx, h.owner, { to: 'filer', body: 'no files' });
    const reply = await owner.call('queue.page', { agent: 'filer' });
    expect(reply.result.rows.map((r: Json) => [r.preview, r.attachmentCount])).toEqual([
      ['two files', 2],
      ['no files', 0],
    ]);
  });

  it('a cursor used with another source filter is stale, not an empty page', async () => {
    const first = await page({ size: 3 });
    const other = await page({ size: 3, source: 'agent', cursor: first.nextCursor });
    expect(other).toMatchObject({ status: 'stale', reason: 'filter' });
  });

  it('a cursor whose boundary card left the queue is stale (anchor gone)', async () => {
    const first = await page({ size: 3, around: allIds[900] });
    await withdrawMessage(h.ctx, h.owner, 'helper', allIds[901] as string);
    expect(await page({ cursor: first.nextCursor, size: 3 })).toMatchObject({
      status: 'stale',
      reason: 'anchor-gone',
    });
    expect(await page({ around: allIds[901], size: 3 })).toMatchObject({
      status: 'stale',
      reason: 'anchor-gone',
    });
  });

  it('a cursor whose boundary card changed state is stale (anchor moved)', async () => {
    const first = await page({ size: 3, around: allIds[800] });
    const message = await findMessageById(h.ctx.store.db, allIds[801] as string);
    await h.ctx.store.transaction(async (trx) => {
      const entry = await findInboxEntry(trx, helper.id, Number(message?.seq));
      if (!entry) throw new Error('no entry');
      await transitionEntry(trx, entry, 'returned', new Date().toISOString(), { failure_kind: 'error' });
    });
    expect(await page({ cursor: first.nextCursor, size: 3 })).toMatchObject({
      status: 'stale',
      reason: 'anchor-moved',
    });
    // The returned card shows its failure kind.
    const around = await page({ around: allIds[801], size: 1 });
    expect(around.rows[0]).toMatchObject({ state: 'returned', returnedFailure: { kind: 'error' } });
  });

  it('a cursor from before a queue reset (new generation) is stale', async () => {
    const first = await page({ size: 3 });
    await h.ctx.store.db
      .updateTable('queues')
      .set({ generation: 'g_reset' })
      .where('agent_id', '=', helper.id)
      .execute();
    try {
      expect(await page({ cursor: first.nextCursor, size: 3 })).toMatchObject({
        status: 'stale',
        reason: 'generation',
        generation: 'g_reset',
      });
    } finally {
      await h.ctx.store.db
        .updateTable('queues')
        .set({ generation: String(first.generation) })
        .where('agent_id', '=', helper.id)
        .execute();
    }
  });

  it('a cursor for another agent is stale, and a cursor from another caller is refused', async () => {
    await h.agent('other');
    await sendMessage(h.ctx, h.owner, { to: 'other', body: 'hi' });
    const first = await page({ size: 3 });
    expect(await page({ agent: 'other', cursor: first.nextCursor })).toMatchObject({
      status: 'stale',
      reason: 'agent',
    });
    await h.person('mallory');
    await h.ctx.store.transaction(async (trx) => {
      const dm = await trx
        .selectFrom('channels')
        .select('id')
        .where('name', '=', 'dm:helper,owner')
        .executeTakeFirstOrThrow();
      const mallory = await trx
        .selectFrom('principals')
        .select('id')
        .where('name', '=', 'mallory')
        .executeTakeFirstOrThrow();
      await trx
        .insertInto('memberships')
        .values({
          channel_id: dm.id,
          principal_id: mallory.id,
          joined_at: new Date().toISOString(),
          left_at: null,
        })
        .execute();
    });
    const mc = await h.client('mallory');
    const reply = await mc.call('queue.page', { agent: 'helper', cursor: first.nextCursor });
    expect(reply.error).toMatchObject({ code: -32010, data: { code: 'invalid_cursor' } });
  });

  it('a source filter lists only that provenance, and its own cursors walk it', async () => {
    const bot = await h.agent('bot');
    await h.ctx.store.transaction(async (trx) => {
      const dm = await trx
        .selectFrom('channels')
        .select('id')
        .where('name', '=', 'dm:helper,owner')
        .executeTakeFirstOrThrow();
      await trx
        .insertInto('memberships')
        .values({
          channel_id: dm.id,
          principal_id: bot.id,
          joined_at: new Date().toISOString(),
          left_at: null,
        })
        .onConflict((oc) => oc.doNothing())
        .execute();
    });
    const dmId = (await page({ size: 1 })).rows[0].channelId;
    const fromBot: string[] = [];
    for (let i = 0; i < 5; i++)
      fromBot.push((await sendMessage(h.ctx, bot, { to: dmId, body: `bot ${i}` })).message_id);
    const walked: string[] = [];
    let result = await page({ source: 'agent', size: 2 });
    walked.push(...result.rows.map((r: Json) => r.messageId));
    while (result.nextCursor !== null) {
      result = await page({ source: 'agent', size: 2, cursor: result.nextCursor });
      expect(result.rows.every((r: Json) => r.source === 'agent')).toBe(true);
      walked.push(...result.rows.map((r: Json) => r.messageId));
    }
    expect(walked).toEqual(fromBot);
  });

  it('refuses sizes outside 1–200 and cursor with around', async () => {
    for (const size of [0, 201, 1.5]) {
      const reply = await owner.call('queue.page', { agent: 'helper', size });
      expect(reply.error?.code).toBe(-32602);
    }
    const both = await owner.call('queue.page', { agent: 'helper', around: allIds[0], cursor: 'x' });
    expect(both.error?.code).toBe(-32602);
  });
});
