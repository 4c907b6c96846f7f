import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../src/host/messages/messages.js';
import { type Json, openServedHost, type RpcClient, type ServedHost } from './support.js';

describe('channel.history', () => {
  let h: ServedHost;
  let owner: RpcClient;
  let channelId: string;
  const sent: string[] = [];
  let bigId: string;
  const big = `${'big 😀 '.repeat(150_000)}end`;

  beforeAll(async () => {
    h = await openServedHost();
    await h.agent('helper');
    owner = await h.client();
    channelId = (await owner.ok('channel.create', { name: 'ops', members: ['helper'] })).id;
    for (let i = 0; i < 250; i++) {
      const body = i === 120 ? big : `message ${i} ${'"\\\u0000'.repeat(i % 7)}`;
      const m = await sendMessage(h.ctx, h.owner, {
        to: channelId,
        body,
        subject: i % 50 === 0 ? 'x'.repeat(5_000) : undefined,
      });
      sent.push(m.message_id);
      if (i === 120) bigId = m.message_id;
    }
  }, 60_000);
  afterAll(async () => h.close());

  it('walks newest first through every message exactly once, each page within 512 KiB', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const reply = await owner.call('channel.history', {
        channelId,
        size: 200,
        ...(cursor ? { cursor } : {}),
      });
      expect(reply.error).toBeUndefined();
      expect(reply.bytes).toBeLessThanOrEqual(512 * 1024);
      seen.push(...reply.result.messages.map((m: Json) => m.messageId));
      if (reply.result.nextCursor === null) break;
      expect(reply.result.hasMore).toBe(true);
      cursor = reply.result.nextCursor;
    }
    expect(seen).toEqual([...sent].reverse());
  });

  it('sends an oversized message compact, with receipts and revision, and message.read returns it whole', async () => {
    const page = await owner.ok('channel.history', { channelId, size: 200 });
    const compact = page.messages.find((m: Json) => m.messageId === bigId);
    const found =
      compact ??
      (await owner.ok('channel.history', { channelId, size: 200, cursor: page.nextCursor })).messages.find(
        (m: Json) => m.messageId === bigId,
      );
    expect(found).toMatchObject({ truncated: true, bodyBytes: Buffer.byteLength(big), revision: 1 });
    expect(Buffer.byteLength(found.body)).toBeLessThanOrEqual(512);
    expect(found.receipts).toEqual([{ agent: 'helper', state: 'waiting' }]);
    expect(found.actions).toBeUndefined();

    const parts: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const reply = await owner.call('message.read', { messageId: bigId, ...(cursor ? { cursor } : {}) });
      expect(reply.bytes).toBeLessThanOrEqual(512 * 1024);
      parts.push(reply.result.part.text);
      if (reply.result.nextCursor === null) break;
      cursor = reply.result.nextCursor;
    }
    expect(parts.join('')).toBe(big);
  });

  it('refuses a history cursor for another channel', async () => {
    const first = await owner.ok('channel.history', { channelId, size: 5 });
    const dm = await owner.ok('message.send', { to: 'helper', body: 'hi' });
    const reply = await owner.call('channel.history', { channelId: dm.channel_id, cursor: first.nextCursor });
    expect(reply.error?.data.code).toBe('invalid_cursor');
  });
});
