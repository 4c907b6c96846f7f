import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel, removeMember } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { connectInMemory, type ToolCaller, type ToolText } from './support.js';

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('cursor refusals (I6)', () => {
  let t: TestHost;
  let alice: Principal;
  let bot: ToolCaller;
  let eve: ToolCaller;
  let channel: string;
  let big: string;

  beforeAll(async () => {
    t = await openTestHost();
    const botAgent = await t.agent('bot');
    const eveAgent = await t.agent('eve');
    alice = await t.person('alice');
    for (const agent of ['bot', 'eve']) await t.manage(agent, 'alice'); // only managers add an agent
    channel = (await createChannel(t.ctx, alice, { name: 'room', members: ['bot', 'eve'] })).id;
    for (let i = 0; i < 5; i++)
      await sendMessage(t.ctx, alice, { to: channel, body: `m${i} ${'z'.repeat(4_000)}` });
    big = (await sendMessage(t.ctx, alice, { to: channel, body: 'q'.repeat(40_000) })).message_id;
    bot = await connectInMemory(t.ctx, botAgent);
    eve = await connectInMemory(t.ctx, eveAgent);
  });
  afterAll(async () => {
    await bot.close();
    await eve.close();
    await t.close();
  });

  const code = (r: ToolText): string | undefined => r.json.error?.code;

  it('a page cursor replayed by another agent is refused', async () => {
    const page = await bot.call('channel_read', { channel_id: channel, limit: 2 });
    expect(page.json.nextCursor).toEqual(expect.any(String));
    expect(
      code(await eve.call('channel_read', { channel_id: channel, limit: 2, cursor: page.json.nextCursor })),
    ).toBe('invalid_cursor');
    expect(
      code(await bot.call('channel_read', { channel_id: channel, limit: 2, cursor: page.json.nextCursor })),
    ).toBe(undefined);
  });

  it('a page cursor used with another filter is refused', async () => {
    const unread = await bot.call('channel_read', { limit: 1 });
    const cursor = unread.json.nextCursor;
    expect(code(await bot.call('channel_read', { channel_id: channel, cursor }))).toBe('invalid_cursor');
    expect(code(await bot.call('channel_read', { channel_id: channel, unread: true, cursor }))).toBe(
      'invalid_cursor',
    );
    expect(code(await bot.call('channel_search', { query: 'm1', cursor }))).toBe('invalid_cursor');
  });

  it('a cursor with any one character changed is refused', async () => {
    const page = await bot.call('channel_read', { limit: 1 });
    const cursor: string = page.json.nextCursor;
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: cursor.length - 1 }),
        fc.constantFrom(...BASE64URL),
        async (index, ch) => {
          fc.pre(cursor[index] !== ch);
          const bad = cursor.slice(0, index) + ch + cursor.slice(index + 1);
          expect(code(await bot.call('channel_read', { limit: 1, cursor: bad }))).toBe('invalid_cursor');
        },
      ),
      { numRuns: 60 },
    );
    const frag = await bot.call('channel_read', { message_id: big });
    const content: string = frag.json.contentCursor;
    const flipped = content.slice(0, 10) + (content[10] === 'A' ? 'B' : 'A') + content.slice(11);
    expect(code(await bot.call('channel_read', { message_id: big, content_cursor: flipped }))).toBe(
      'invalid_cursor',
    );
  });

  it('a content cursor is refused for another agent and for another message', async () => {
    const frag = await bot.call('channel_read', { message_id: big });
    const content = frag.json.contentCursor;
    expect(code(await eve.call('channel_read', { message_id: big, content_cursor: content }))).toBe(
      'invalid_cursor',
    );
    const other = (await sendMessage(t.ctx, alice, { to: channel, body: 'w'.repeat(40_000) })).message_id;
    expect(code(await bot.call('channel_read', { message_id: other, content_cursor: content }))).toBe(
      'invalid_cursor',
    );
  });

  it('a content cursor is refused after the message was edited', async () => {
    const target = (await sendMessage(t.ctx, alice, { to: channel, body: 'e'.repeat(40_000) })).message_id;
    const frag = await bot.call('channel_read', { message_id: target });
    await editMessage(t.ctx, alice, target, { body: 'E'.repeat(40_000) });
    const r = await bot.call('channel_read', { message_id: target, content_cursor: frag.json.contentCursor });
    expect(code(r)).toBe('invalid_cursor');
    expect(r.json.error.message).toMatch(/message_id/);
  });

  it('a member removed mid-fragment-chain is refused on the next fragment', async () => {
    const side = await createChannel(t.ctx, alice, { name: 'side', members: ['bot'] });
    const target = (await sendMessage(t.ctx, alice, { to: side.id, body: 's'.repeat(40_000) })).message_id;
    const first = await bot.call('channel_read', { message_id: target });
    const second = await bot.call('channel_read', {
      message_id: target,
      content_cursor: first.json.contentCursor,
    });
    expect(second.json.offset).toBeGreaterThan(0);
    await removeMember(t.ctx, alice, side.id, 'bot');
    expect(
      code(await bot.call('channel_read', { message_id: target, content_cursor: second.json.contentCursor })),
    ).toBe('not_member');
    const page = await bot.call('channel_read', { channel_id: side.id });
    expect(code(page)).toBe('not_member');
  });

  it('a page cursor is refused once the caller left the channel it pages', async () => {
    const room = await createChannel(t.ctx, alice, { name: 'leaving', members: ['bot'] });
    for (let i = 0; i < 3; i++) await sendMessage(t.ctx, alice, { to: room.id, body: `l${i}` });
    const page = await bot.call('channel_read', { channel_id: room.id, limit: 1 });
    await removeMember(t.ctx, alice, room.id, 'bot');
    expect(
      code(await bot.call('channel_read', { channel_id: room.id, limit: 1, cursor: page.json.nextCursor })),
    ).toBe('not_member');
  });
});
