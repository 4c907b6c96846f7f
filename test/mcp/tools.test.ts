import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel, removeMember } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { readProjection, sendMessage } from '../../src/host/messages/messages.js';
import { projectionText } from '../../src/host/messages/projection.js';
import { beginTurn, endTurn } from '../../src/host/turns/index.js';
import { openTestHost, type TestHost } from '../support/host.js';
import {
  connectInMemory,
  messageIds,
  pendingIds,
  readAllFragments,
  type ToolCaller,
  walkPages,
  withBudget,
} from './support.js';

const BUDGET = 12_000;

describe('the MCP tools, through the official client', () => {
  let t: TestHost;
  let bot: Principal;
  let alice: Principal;
  let mcp: ToolCaller;
  let general: string;

  beforeAll(async () => {
    t = await openTestHost();
    bot = await t.agent('bot', 'turn');
    alice = await t.person('alice');
    await t.manage('bot', 'alice'); // only its managers add an agent to a group
    general = (await createChannel(t.ctx, alice, { name: 'general', members: ['bot'] })).id;
    mcp = await connectInMemory(t.ctx, bot);
  });
  afterAll(async () => {
    await mcp.close();
    await t.close();
  });

  const send = async (body: string, to = '#general', from = alice) =>
    (await sendMessage(t.ctx, from, { to, body })).message_id;
  const drain = async () => {
    const ids = await pendingIds(t.ctx, bot.id);
    if (ids.length > 0) await mcp.call('message_archive', { message_ids: ids });
  };

  it('lists the tools of the contract with strict argument schemas', async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'channel_read',
      'channel_read_image',
      'channel_search',
      'inbox_status',
      'message_archive',
      'message_reply',
      'message_send',
      'message_status',
    ]);
    for (const tool of tools) expect(tool.inputSchema.additionalProperties).toBe(false);
    const read = tools.find((tool) => tool.name === 'channel_read')!;
    expect(Object.keys(read.inputSchema.properties ?? {}).sort()).toEqual(
      ['channel_id', 'content_cursor', 'cursor', 'limit', 'message_id', 'unread'].sort(),
    );
    // Paging and the one-call reply+archive, never "list, then one read per message".
    expect(read.description).toMatch(/nextCursor/);
    expect(read.description).toMatch(/archive:true/);
    for (const tool of tools) expect(tool.description ?? '').not.toMatch(/\bls\b|one read per message/i);
  });

  it('refuses unknown argument names with invalid_params, naming them, and changes nothing', async () => {
    const id = await send('keep me');
    const r = await mcp.call('message_archive', { message_ids: [id], force: true });
    expect(r.isError).toBe(true);
    expect(r.json.error.code).toBe('invalid_params');
    expect(r.json.error.message).toContain('"force"');
    expect(await pendingIds(t.ctx, bot.id)).toContain(id);
    const hostile = await mcp.call('channel_read', { ['\u0000'.repeat(20_000)]: 1 });
    expect(hostile.json.error.code).toBe('invalid_params');
    expect(hostile.text.length).toBeLessThanOrEqual(BUDGET);
    const badLimit = await mcp.call('channel_read', { limit: 101 });
    expect(badLimit.json.error.code).toBe('invalid_params');
    await drain();
  });

  it('reads unread messages FIFO across channels as one page', async () => {
    const a = await send('one');
    const b = await send('two', 'bot');
    const c = await send('three');
    const page = await mcp.call('channel_read');
    expect(page.isError).toBe(false);
    expect(messageIds(page)).toEqual([a, b, c]);
    expect(page.json).toMatchObject({ nextCursor: null, omitted: 0, outputLimit: BUDGET });
    // The projection, with what its sender is to the agent right after the author.
    const { channel_id, message_id, author, ...rest } = await readProjection(t.ctx, bot, a);
    expect(page.json.messages[0]).toEqual({ channel_id, message_id, author, sender: 'manager', ...rest });
    expect(Object.keys(page.json.messages[0]).indexOf('sender')).toBe(3);
    await drain();
  });

  it('reads a channel newest first by default, and its unread ones oldest first with unread:true', async () => {
    const ids = [await send('h1'), await send('h2'), await send('h3')];
    const history = await mcp.call('channel_read', { channel_id: general, limit: 2 });
    expect(messageIds(history)).toEqual([ids[2], ids[1]]);
    const rest = await mcp.call('channel_read', {
      channel_id: general,
      limit: 2,
      cursor: history.json.nextCursor,
    });
    expect(rest.json.messages[0].message_id).toBe(ids[0]);
    const unread = await mcp.call('channel_read', { channel_id: general, unread: true });
    expect(messageIds(unread)).toEqual(ids);
    await drain();
  });

  it('cuts pages at the budget, counts what it left out, and a cursor walk visits everything once in order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push(await send(`${i} ${'中文😀 '.repeat(150)}`));
    const pages = await walkPages(mcp, { limit: 100 });
    expect(pages.length).toBeGreaterThan(3);
    for (const page of pages) expect(page.text.length).toBeLessThanOrEqual(BUDGET);
    const first = pages[0]!.json;
    expect(first.omitted).toBe(60 - first.messages.length);
    expect(pages.flatMap((p) => messageIds(p))).toEqual(ids);
    await drain();
  });

  it('a page that omits messages leaves them pending (in a successful turn only the returned ones are handled)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await send(`${i} ${'x'.repeat(1_500)}`));
    const turn = await beginTurn(t.ctx, bot);
    const page = await mcp.call('channel_read', { limit: 30 });
    const got = messageIds(page);
    expect(page.json.omitted).toBe(30 - got.length);
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(30);
    const settled = await endTurn(t.ctx, bot, turn.id, { ok: true });
    expect(settled.handled).toEqual(got);
    expect(await pendingIds(t.ctx, bot.id)).toEqual(ids.slice(got.length));
    await drain();
  });

  it('points at an oversized message with readContent and a cursor past it; its fragments rejoin exactly', async () => {
    const small1 = await send('before');
    const big = await send(`${'😀中\u0000"\\\u001f'.repeat(40_000)}end`);
    const small2 = await send('after');
    await mcp.call('message_archive', { message_ids: [small1] });
    const page = await mcp.call('channel_read');
    expect(page.json.messages).toEqual([]);
    expect(page.json.readContent).toEqual({ channel_id: general, message_id: big });
    expect(page.json.omitted).toBe(2);
    const next = await mcp.call('channel_read', { cursor: page.json.nextCursor });
    expect(messageIds(next)).toEqual([small2]);

    const { joined, results } = await readAllFragments(mcp, big);
    expect(results.length).toBeGreaterThan(20);
    for (const r of results) expect(r.text.length).toBeLessThanOrEqual(BUDGET);
    const projection = await readProjection(t.ctx, bot, big);
    expect(joined).toBe(projectionText(projection));
    expect(JSON.parse(joined)).toEqual(projection);
    expect(results.at(-1)!.json.complete).toBe(true);
    // Every fragment says what the sender is to the agent, outside the projection text it slices.
    for (const r of results) expect(r.json.sender).toBe('manager');
    await drain();
  });

  it('returns a message whole by message_id when it fits', async () => {
    const id = await send('whole');
    const r = await mcp.call('channel_read', { message_id: id });
    expect(r.json.messages).toEqual([{ ...(await readProjection(t.ctx, bot, id)), sender: 'manager' }]);
    await drain();
  });

  it('refuses reads of a message or channel the caller cannot see', async () => {
    const other = await createChannel(t.ctx, alice, { name: 'private', members: [] });
    const secret = (await sendMessage(t.ctx, alice, { to: other.id, body: 'secret words' })).message_id;
    expect((await mcp.call('channel_read', { message_id: secret })).json.error.code).toBe('not_member');
    expect((await mcp.call('channel_read', { channel_id: other.id })).json.error.code).toBe('not_member');
    expect((await mcp.call('channel_search', { query: 'secret' })).json.messages).toEqual([]);
    expect((await mcp.call('channel_read', { message_id: 'nope' })).json.error.code).toBe('not_found');
  });

  it('searches the caller’s channels in pages', async () => {
    const ids = [await send('the zebra crossing'), await send('a zebra again'), await send('no match here')];
    const r = await mcp.call('channel_search', { query: 'zebra', limit: 1 });
    expect(messageIds(r)).toEqual([ids[1]]);
    const more = await mcp.call('channel_search', { query: 'zebra', limit: 1, cursor: r.json.nextCursor });
    expect(messageIds(more)).toEqual([ids[0]]);
    expect(more.json.nextCursor).toBeNull();
    await drain();
  });

  it('search points at an oversized match with readContent and moves past it', async () => {
    const big = await send(`needle ${'n'.repeat(30_000)}`);
    const small = await send('needle small');
    const first = await mcp.call('channel_search', { query: 'needle' });
    expect(messageIds(first)).toEqual([small]);
    expect(first.json.omitted).toBe(1);
    const next = await mcp.call('channel_search', { query: 'needle', cursor: first.json.nextCursor });
    expect(next.json).toMatchObject({
      messages: [],
      readContent: { channel_id: general, message_id: big },
      nextCursor: null,
    });
    await drain();
  });

  it('reads history across all the caller’s channels newest first with unread:false', async () => {
    const a = await send('in general');
    const b = await send('in the dm', 'bot');
    const page = await mcp.call('channel_read', { unread: false, limit: 2 });
    expect(messageIds(page)).toEqual([b, a]);
    await drain();
  });

  it('sends, replies with archive in one call, and archives with idempotent receipts', async () => {
    const sent = await mcp.call('message_send', { to: '#general', body: 'hello from bot' });
    expect(sent.json).toEqual({ message_id: expect.any(String), channel_id: general });
    const question = await send('question?');
    const reply = await mcp.call('message_reply', { message_id: question, body: 'answer', archive: true });
    expect(reply.json).toMatchObject({ channel_id: general, archived: { already: false } });
    expect(await pendingIds(t.ctx, bot.id)).not.toContain(question);
    const again = await mcp.call('message_archive', { message_ids: [question] });
    expect(again.json).toEqual({
      receipts: [{ id: question, archivedAt: expect.any(String), already: true }],
      archived: 1,
      omitted: 0,
    });
  });

  it('inbox_status is tiny: counts, the oldest readable message, and whether a turn is open', async () => {
    const id = await send('status me');
    const r = await mcp.call('inbox_status');
    expect(r.json).toMatchObject({
      agent: 'bot',
      settlement: 'turn',
      pending: 1,
      returned: 0,
      openTurn: false,
    });
    expect(r.json.oldest).toMatchObject({ message_id: id, channel_id: general, from: 'alice' });
    expect(r.text.length).toBeLessThan(400);
    await drain();
  });

  it('counts a message as received only when the model got all of it in this turn', async () => {
    const big = await send('y'.repeat(30_000));
    const first = await mcp.call('channel_read', { message_id: big });
    expect(first.json.complete).toBe(false);
    // The chain is begun in a peek and finished in a turn: the turn did not see the start.
    const turn = await beginTurn(t.ctx, bot);
    let next = first.json.contentCursor;
    while (next)
      next = (await mcp.call('channel_read', { message_id: big, content_cursor: next })).json.contentCursor;
    expect((await endTurn(t.ctx, bot, turn.id, { ok: true })).handled).toEqual([]);
    // Restarting from message_id inside a turn counts once the chain completes.
    const again = await beginTurn(t.ctx, bot);
    await readAllFragments(mcp, big);
    expect((await endTurn(t.ctx, bot, again.id, { ok: true })).handled).toEqual([big]);
  });

  it('a peek (no open turn) consumes nothing, even in turn mode', async () => {
    const id = await send('peeked');
    expect(messageIds(await mcp.call('channel_read'))).toEqual([id]);
    const turn = await beginTurn(t.ctx, bot);
    expect((await endTurn(t.ctx, bot, turn.id, { ok: true })).handled).toEqual([]);
    expect(await pendingIds(t.ctx, bot.id)).toEqual([id]);
    await drain();
  });

  it('honours a configured output limit', async () => {
    const small = await connectInMemory(await withBudget(t.ctx, 3_000), bot);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push(await send(`${i} ${'s'.repeat(900)}`));
      const pages = await walkPages(small, { limit: 100 });
      for (const page of pages) {
        expect(page.text.length).toBeLessThanOrEqual(3_000);
        expect(page.json.outputLimit).toBe(3_000);
      }
      expect(pages.flatMap(messageIds)).toEqual(ids);
    } finally {
      await small.close();
    }
    await drain();
  });

  it('an edit after the read leaves the message pending', async () => {
    const id = await send('draft');
    const turn = await beginTurn(t.ctx, bot);
    await mcp.call('channel_read');
    await editMessage(t.ctx, alice, id, { body: 'final' });
    expect((await endTurn(t.ctx, bot, turn.id, { ok: true })).handled).toEqual([]);
    expect(await pendingIds(t.ctx, bot.id)).toEqual([id]);
    await drain();
  });

  it('a member removed from the channel reads nothing more from it', async () => {
    const side = await createChannel(t.ctx, alice, { name: 'side', members: ['bot'] });
    const id = (await sendMessage(t.ctx, alice, { to: side.id, body: 'side note' })).message_id;
    await removeMember(t.ctx, alice, side.id, 'bot');
    expect(messageIds(await mcp.call('channel_read'))).not.toContain(id);
    expect((await mcp.call('channel_read', { message_id: id })).json.error.code).toBe('not_member');
    expect(await pendingIds(t.ctx, bot.id)).toContain(id);
  });
});
