// Live channel lists, unread counts, reply excerpts and per-agent receipts over the WebSocket:
// a principal hears about its own memberships only, and an outsider hears nothing at all.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createChannel, removeMember } from '../../src/host/channels/channels.js';
import { acceptInvitation } from '../../src/host/channels/invitations.js';
import { MAX_UNREAD, markRead, unreadCounts } from '../../src/host/channels/read-marks.js';
import { type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import { excerptLine, REPLY_EXCERPT_UNITS } from '../../src/host/reads/history.js';
import { runCli } from '../support/host.js';
import { type Json, openServedHost, type RpcClient, type ServedHost } from './support.js';

let h: ServedHost;
let owner: RpcClient;
let outsider: RpcClient;
let helper: Principal;
let bob: Principal;

const channelNotes = (c: RpcClient) =>
  c.notifications
    .filter((n) => n.method.startsWith('channel.'))
    .map((n) => ({ method: n.method, params: n.params }));

beforeAll(async () => {
  h = await openServedHost();
  helper = await h.agent('helper');
  bob = await h.person('bob');
  await h.manage('helper', 'bob'); // only its managers add an agent to a group
  await h.person('eve');
  owner = await h.client('owner');
  outsider = await h.client('eve');
  expect(await owner.ok('subscribe', { channelList: true })).toEqual({
    subscribed: { queues: [], channels: [], channelList: true },
  });
  await outsider.ok('subscribe', { channelList: true });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('the channel list, live', () => {
  let team = '';

  it('a channel another person makes naming you arrives as invitations.changed, then channel.joined once you accept', async () => {
    const made = await createChannel(h.ctx, bob, { name: 'team', members: ['owner', 'helper'] });
    team = made.id;
    await owner.waitFor((n) => n.method === 'invitations.changed');
    const invited = await owner.ok('channel.invitations', {});
    expect(invited.invitations.map((i: Json) => i.channel.name)).toEqual(['team']);
    expect(channelNotes(owner).filter((n) => JSON.stringify(n).includes(team))).toEqual([]);
    // Nobody else hears of someone else's invitation.
    expect(outsider.notifications.filter((n) => n.method === 'invitations.changed')).toEqual([]);
    await owner.ok('channel.accept', { channel_id: team });
    const joined = await owner.waitFor((n) => n.method === 'channel.joined' && n.params.channel.id === team);
    expect(joined.params.channel).toMatchObject({ name: 'team', kind: 'group', memberCount: 3 });
    expect(joined.params.channel.members.map((m: Json) => m.name)).toEqual(['bob', 'helper', 'owner']);
  });

  it('a DM the CLI starts in another process arrives with its unread count', async () => {
    const cli = await runCli(['message', 'send', 'owner', '-m', 'hello from the CLI', '--as', 'helper'], {
      home: h.home,
    });
    expect(cli.code).toBe(0);
    const joined = await owner.waitFor(
      (n) => n.method === 'channel.joined' && n.params.channel.kind === 'dm',
    );
    expect(joined.params.channel).toMatchObject({ name: 'dm:helper,owner' });
    // The DM and its first message commit apart: the count is 1 at once or after channel.unread.
    const unread =
      joined.params.channel.unread === 1 ||
      (await owner.waitFor((n) => n.method === 'channel.unread' && n.params.unread === 1)) !== undefined;
    expect(unread).toBe(true);
  });

  it('messages by others raise the unread count, your own read mark and your own message clear it', async () => {
    const first = await sendMessage(h.ctx, bob, { to: team, body: 'one' });
    await sendMessage(h.ctx, helper, { to: team, body: 'two' });
    await owner.waitFor(
      (n) => n.method === 'channel.unread' && n.params.channelId === team && n.params.unread === 2,
    );
    const page = await owner.ok('channel.list', {});
    expect(page.channels.find((c: Json) => c.id === team).unread).toBe(2);

    await owner.ok('message.markRead', { messageId: first.message_id });
    await owner.waitFor(
      (n) => n.method === 'channel.unread' && n.params.channelId === team && n.params.unread === 1,
    );
    await owner.ok('message.send', { to: team, body: 'I have read it all' });
    await owner.waitFor(
      (n) => n.method === 'channel.unread' && n.params.channelId === team && n.params.unread === 0,
    );
  });

  it('counts stop at the cap, and a member added later counts only what came after joining', async () => {
    const many = await createChannel(h.ctx, bob, { name: 'busy', members: ['helper'] });
    for (let i = 0; i < MAX_UNREAD + 5; i++) await sendMessage(h.ctx, helper, { to: many.id, body: `m${i}` });
    await h.server.hub.pump();
    await addMember(h.ctx, bob, many.id, 'owner');
    await acceptInvitation(h.ctx, await resolvePrincipal(h.ctx, 'owner'), many.id);
    const joined = await owner.waitFor(
      (n) => n.method === 'channel.joined' && n.params.channel.id === many.id,
    );
    expect(joined.params.channel.unread).toBe(0);
    await sendMessage(h.ctx, helper, { to: many.id, body: 'after you joined' });
    await owner.waitFor(
      (n) => n.method === 'channel.unread' && n.params.channelId === many.id && n.params.unread === 1,
    );
    const helpers = await unreadCounts(h.ctx.store.db, helper.id, [many.id]);
    expect(helpers.get(many.id)).toBe(0); // helper wrote the newest message
    const bobs = await unreadCounts(h.ctx.store.db, bob.id, [many.id]);
    expect(bobs.get(many.id)).toBe(MAX_UNREAD);
  });

  it('members joining show as channel.updated; being removed arrives as channel.left', async () => {
    await addMember(h.ctx, bob, team, 'eve');
    await acceptInvitation(h.ctx, await resolvePrincipal(h.ctx, 'eve'), team);
    const updated = await owner.waitFor(
      (n) =>
        n.method === 'channel.updated' && n.params.channel.id === team && n.params.channel.memberCount === 4,
    );
    expect(updated.params.channel.members.map((m: Json) => m.name)).toContain('eve');
    await outsider.waitFor((n) => n.method === 'channel.joined' && n.params.channel.id === team);
    await removeMember(h.ctx, bob, team, 'owner');
    const left = await owner.waitFor((n) => n.method === 'channel.left');
    expect(left.params).toEqual({ channelId: team });
    // The removed member no longer hears the channel's activity.
    const before = channelNotes(owner).length;
    await sendMessage(h.ctx, bob, { to: team, body: 'after owner left' });
    // eve hears the message: as `channel.unread`, or inside a `channel.updated` row when its outbox
    // still held the members change (owner removed) and coalesced the two (`members` outranks
    // `unread`, docs/rpc.md). Which one depends on how fast eve's connection drains.
    await outsider.waitFor(
      (n) =>
        (n.method === 'channel.unread' && n.params.channelId === team && n.params.unread >= 1) ||
        (n.method === 'channel.updated' && n.params.channel.id === team && n.params.channel.unread >= 1),
    );
    await h.server.hub.pump();
    expect(channelNotes(owner).slice(before)).toEqual([]);
  });

  it('an outsider heard about no channel until it was added to one, and about nothing of anyone else', async () => {
    // eve's own DM is the last thing: once it arrives, everything before it was judged for eve too.
    await sendMessage(h.ctx, bob, { to: 'eve', body: 'hi eve' });
    await outsider.waitFor((n) => n.method === 'channel.joined' && n.params.channel.kind === 'dm');
    const heard = channelNotes(outsider);
    const channelsHeard = new Set(heard.map((n) => n.params.channelId ?? n.params.channel?.id));
    const eveDm = heard.find((n) => n.method === 'channel.joined' && n.params.channel.kind === 'dm')?.params
      .channel.id;
    expect([...channelsHeard].sort()).toEqual([team, eveDm].sort());
    // And nothing about team from before eve was added.
    const firstTeam = heard.findIndex((n) => (n.params.channelId ?? n.params.channel?.id) === team);
    expect(heard[firstTeam]?.method).toBe('channel.joined');
  });

  it('subscribe {channelList} over POST is refused like every subscription', async () => {
    const res = await fetch(`${h.server.url}/rpc`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await h.token('owner')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params: { channelList: true } }),
    });
    expect(((await res.json()) as Json).error.data.code).toBe('invalid_params');
  });
});

describe('replies and receipts, live', () => {
  it("a reply carries its parent's author and first line, in history and in the live event", async () => {
    const dm = await owner.ok('message.send', { to: 'helper', body: 'parent' });
    await owner.ok('subscribe', { channels: [dm.channel_id] });
    const parent = await sendMessage(h.ctx, helper, {
      to: 'owner',
      body: `\n  First line of the parent ${'é'.repeat(300)}\nsecond line`,
    });
    const reply = await sendMessage(h.ctx, h.owner, {
      to: 'helper',
      body: 'my answer',
      replyTo: parent.message_id,
    });
    const live = await owner.waitFor(
      (n) => n.method === 'channel.message' && n.params.message.messageId === reply.message_id,
    );
    const page = await owner.ok('channel.history', { channelId: dm.channel_id });
    const row = page.messages.find((m: Json) => m.messageId === reply.message_id);
    for (const message of [row, live.params.message]) {
      expect(message.replyTo).toBe(parent.message_id);
      expect(message.replyExcerpt).toMatchObject({
        messageId: parent.message_id,
        author: { name: 'helper', kind: 'agent' },
        deleted: false,
      });
      expect(message.replyExcerpt.excerpt).toMatch(/^First line of the parent é+…$/);
      expect(message.replyExcerpt.excerpt.length).toBe(REPLY_EXCERPT_UNITS + 1);
    }
    expect(page.messages.find((m: Json) => m.messageId === parent.message_id).replyExcerpt).toBeNull();
  });

  it('excerpts are one line, cut on a code point', () => {
    expect(excerptLine('short')).toBe('short');
    expect(excerptLine('one\ntwo')).toBe('one…');
    expect(excerptLine('   \n\n  ')).toBe('');
    const emoji = '😀'.repeat(100);
    const cut = excerptLine(emoji);
    expect(cut.endsWith('…')).toBe(true);
    expect(cut.length).toBeLessThanOrEqual(REPLY_EXCERPT_UNITS + 1);
    expect(Array.from(cut.slice(0, -1)).every((c) => c === '😀')).toBe(true);
  });

  it('an agent archiving your message moves its receipt live, and only channel members hear it', async () => {
    const sent = await owner.ok('message.send', { to: 'helper', body: 'please archive me' });
    await owner.ok('subscribe', { channels: [sent.channel_id] });
    const refused = await outsider.call('subscribe', { channels: [sent.channel_id] });
    expect(refused.error?.data.code).toBe('not_member');
    await archiveMessages(h.ctx, helper, [sent.message_id]);
    const moved = await owner.waitFor(
      (n) => n.method === 'channel.receipts' && n.params.messageId === sent.message_id,
    );
    expect(moved.params).toMatchObject({
      channelId: sent.channel_id,
      receipts: [{ agent: 'helper', state: 'archived' }],
      receiptCount: 1,
    });
    expect(outsider.notifications.some((n) => n.method === 'channel.receipts')).toBe(false);
  });
});

// Marks only move forward: marking the same message again appends no event (no notification).
it('a read mark that does not move is not news', async () => {
  const dm = await owner.ok('message.send', { to: 'bob', body: 'to bob' });
  const marks = () =>
    h.ctx.store.db
      .selectFrom('events')
      .selectAll()
      .where('kind', '=', 'read.marked')
      .where('channel_id', '=', dm.channel_id)
      .execute();
  await markRead(h.ctx, h.owner, dm.message_id);
  expect((await marks()).length).toBe(1);
  await markRead(h.ctx, h.owner, dm.message_id);
  expect((await marks()).length).toBe(1);
});

describe('channel-list changes held while a socket is backed up', () => {
  it('stay one entry per channel, collapse past the bound into one resync, and membership outranks unread', async () => {
    const { CoalescingOutbox } = await import('../../src/host/live/live-outbox.js');
    let buffered = 10_000_000;
    const sent: string[] = [];
    const rendered: [string, string][] = [];
    const outbox = new CoalescingOutbox({
      sink: { bufferedAmount: () => buffered, send: (text) => sent.push(text) },
      highWaterBytes: 1000,
      pollMs: 5,
      maxHeldSidebar: 8,
      renderQueue: async () => null,
      renderChannel: async () => null,
      renderResync: () => 'resync',
      renderSidebar: async (channelId, change) => {
        rendered.push([channelId, change]);
        return `${change}:${channelId}`;
      },
      renderSidebarResync: async () => 'list-resync',
    });
    for (let i = 0; i < 1000; i++) outbox.sidebarChanged('c1', i % 2 === 0 ? 'unread' : 'members');
    outbox.sidebarChanged('c1', 'unread');
    expect(outbox.pendingSize()).toBe(1);
    buffered = 0;
    await until(() => sent.length === 1);
    expect(sent).toEqual(['members:c1']);

    buffered = 10_000_000;
    for (let i = 0; i < 10_000; i++) outbox.sidebarChanged(`c${i}`, 'unread');
    expect(outbox.pendingSize()).toBe(1);
    buffered = 0;
    await until(() => sent.length === 2);
    expect(outbox.pendingSize()).toBe(0);
    expect(sent).toEqual(['members:c1', 'list-resync']);
    expect(rendered).toEqual([['c1', 'members']]);
    outbox.close();
  });
});

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
