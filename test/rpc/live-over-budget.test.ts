import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LiveNotifications } from '../../src/core/wire/index.js';
import { openServedHost, type RpcClient, type ServedHost } from './support.js';

// A `channel.message` whose record does not fit the reply budget even compact comes as a stub
// (`LiveMessageStub` in src/core/wire/live.ts): where the message is and how big its body is. The
// page shows it as a row that reads the text with `message.read` (web/src/channels/message-stub.tsx),
// because a history page holding the message would be over the budget too.
const REPLY_BYTES = 6 * 1024;
/** JSON writes U+0001 as six bytes: a 512-byte preview of them is 3 KiB, a subject the same again. */
const ESCAPED = '\u0001';

describe('a live message over the reply budget', () => {
  let h: ServedHost;
  let owner: RpcClient;
  let channelId: string;

  beforeAll(async () => {
    h = await openServedHost({ limits: { replyBytes: REPLY_BYTES } });
    await h.agent('helper');
    owner = await h.client();
    channelId = (await owner.ok('channel.create', { name: 'ops', members: ['helper'] })).id;
    await owner.ok('subscribe', { channels: [channelId] });
  });
  afterAll(async () => h.close());

  const heard = async (messageId: string) => {
    const n = await owner.waitFor(
      (n) => n.method === 'channel.message' && n.params.message.messageId === messageId,
    );
    expect(Buffer.byteLength(n.raw, 'utf8')).toBeLessThanOrEqual(REPLY_BYTES);
    return n.params as LiveNotifications['channel.message'];
  };

  it('comes as a stub with no author and no body, and its text reads in parts within the budget', async () => {
    const body = `${ESCAPED.repeat(2_000)}end`;
    const sent = await owner.ok('message.send', { to: channelId, subject: ESCAPED.repeat(600), body });
    const params = await heard(sent.message_id);
    expect(params).toMatchObject({ channelId, kind: 'message.created' });
    expect(params.message).toEqual({
      messageId: sent.message_id,
      seq: expect.any(Number),
      bodyBytes: Buffer.byteLength(body, 'utf8'),
      truncated: true,
    });

    // Neither would a history page hold it: the reader's way to the text is message.read.
    const history = await owner.call('channel.history', { channelId, size: 1 });
    expect(history.error?.data.code).toBe('too_large');
    const parts: string[] = [];
    let cursor: string | undefined;
    do {
      const read = await owner.call('message.read', {
        messageId: sent.message_id,
        ...(cursor ? { cursor } : {}),
      });
      expect(read.bytes).toBeLessThanOrEqual(REPLY_BYTES);
      expect(read.result.status).toBe('body');
      parts.push(read.result.part.text);
      cursor = read.result.nextCursor ?? undefined;
    } while (cursor);
    expect(parts.join('')).toBe(body);
  });

  it('a message that fits comes whole, with its author', async () => {
    const sent = await owner.ok('message.send', { to: channelId, body: 'small' });
    const { message } = await heard(sent.message_id);
    expect(message).toMatchObject({ body: 'small', truncated: false, author: { name: 'owner' } });
  });
});
