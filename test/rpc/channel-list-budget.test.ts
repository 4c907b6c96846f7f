// channel.list adds each row's unread count after fitting the page: it reserves room for the rows
// it lists, so a small page fits a small reply budget, and every reply stays within it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { type Json, openServedHost, type RpcClient, type ServedHost } from './support.js';

const REPLY_BYTES = 2_000;
const CHANNELS = 12;

describe('channel.list within a small reply budget, unread counts included', () => {
  let h: ServedHost;
  let owner: RpcClient;
  let bot: Principal;
  beforeAll(async () => {
    h = await openServedHost({ limits: { replyBytes: REPLY_BYTES } });
    bot = await h.agent('bot');
    // The channels are made a second back: a message in the very millisecond of joining counts as
    // history, not unread (read-marks.ts), which made the 100 a 99 when a send shared that millisecond.
    const earlier = { ...h.ctx, now: () => new Date(Date.now() - 1_000) };
    for (let i = 0; i < CHANNELS; i++) {
      const name = `room-${String(i).padStart(2, '0')}`;
      await createChannel(earlier, h.owner, { name, members: ['bot'] });
      // Unread counts of every width up to the cap's three digits.
      for (let n = 0; n < [1, 12, 100][i % 3]!; n++)
        await sendMessage(h.ctx, bot, { to: `#${name}`, body: 'x' });
    }
    owner = await h.client();
  });
  afterAll(() => h.close());

  it('a page of 3 that fits comes whole (it was refused: room was kept for 200 counts)', async () => {
    const reply = await owner.call('channel.list', { limit: 3 });
    expect(reply.error).toBeUndefined();
    expect(reply.result.channels.map((c: Json) => c.name)).toEqual(['room-00', 'room-01', 'room-02']);
    expect(reply.result.channels.map((c: Json) => c.unread)).toEqual([1, 12, 100]);
    expect(reply.bytes).toBeLessThanOrEqual(REPLY_BYTES);
  });

  it('the largest page is cut to the budget, and walking its cursor lists every channel once', async () => {
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const reply = await owner.call('channel.list', { limit: 200, ...(cursor ? { cursor } : {}) });
      expect(reply.error).toBeUndefined();
      expect(reply.bytes).toBeLessThanOrEqual(REPLY_BYTES);
      names.push(...reply.result.channels.map((c: Json) => c.name));
      cursor = reply.result.nextCursor ?? undefined;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBeGreaterThan(1);
    expect(names).toEqual(Array.from({ length: CHANNELS }, (_, i) => `room-${String(i).padStart(2, '0')}`));
  });
});
