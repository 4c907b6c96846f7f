// Reproductions from issue 12 ("authorization before commit"), on both backends: queue steering by
// outsiders, summary ids from other conversations, a flood of channels naming a person, and nobody
// being able to leave. Each refused call is shown to change nothing (a snapshot of every table).
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addAgentManager } from '../../src/host/agents/agent-managers.js';
import { createChannel, listAllChannels } from '../../src/host/channels/channels.js';
import { acceptInvitation } from '../../src/host/channels/invitations.js';
import { nowIso } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { transitionEntry } from '../../src/host/queue/inbox.js';
import { pauseQueue } from '../../src/host/queue/queue.js';
import { findInboxEntry } from '../../src/store/ops/inbox.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS, type RpcLimits } from '../../src/surfaces/rpc/methods.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect reply JSON field by field.
type Json = any;

describe.each(backendsUnderTest())('who may do what (%s)', (backend) => {
  let h: ConformanceHost;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'access');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
  });
  afterEach(async () => {
    await h.close();
  });

  async function rpc(
    principal: Principal,
    method: string,
    params: unknown,
    limits: Partial<RpcLimits> = {},
  ): Promise<Json> {
    const reply = await handleRpcText(
      { ctx: h.ctx, principal, limits: { ...DEFAULT_RPC_LIMITS, ...limits } },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    );
    return JSON.parse(reply ?? 'null');
  }

  async function returnEntry(agent: Principal, messageId: string): Promise<void> {
    await h.ctx.store.transaction(async (trx) => {
      const message = await findMessageById(trx, messageId);
      const entry = message && (await findInboxEntry(trx, agent.id, message.seq));
      if (!entry) throw new Error('no entry');
      await transitionEntry(trx, entry, 'returned', nowIso(h.ctx), { failure_kind: 'crash' });
    });
  }

  it('a person who shares no channel with an agent cannot pause or resume its queue, and nothing changes', async () => {
    const helper = await h.agent('helper');
    const mallory = await h.person('mallory');
    await sendMessage(h.ctx, h.owner, { to: 'helper', body: 'work item' });
    await pauseQueue(h.ctx, h.owner, 'helper', 'owner paused');
    const before = await snapshotStore(h.ctx);
    for (const method of ['queue.pause', 'queue.resume']) {
      const reply = await rpc(mallory, method, { agent: 'helper' });
      expect(reply.error?.data.code, method).toBe('denied');
      expect(await snapshotStore(h.ctx), method).toEqual(before);
    }
    await expect(pauseQueue(h.ctx, mallory, 'helper')).rejects.toMatchObject({ code: 'denied' });
    expect(await snapshotStore(h.ctx)).toEqual(before);
    // The owner may pause or resume any agent's queue.
    const ok = await rpc(h.owner, 'queue.resume', { agent: 'helper' });
    expect(ok.result.summary.paused).toBe(false);
    expect(helper.kind).toBe('agent');
  });

  it('another agent sharing a channel cannot steer a queue; the agent itself can', async () => {
    await h.agent('helper');
    const other = await h.agent('other');
    await createChannel(h.ctx, h.owner, { name: 'team', members: ['helper', 'other'] });
    const before = await snapshotStore(h.ctx);
    expect((await rpc(other, 'queue.pause', { agent: 'helper' })).error?.data.code).toBe('denied');
    expect(await snapshotStore(h.ctx)).toEqual(before);
    const helper = await h.agent('helper2');
    expect((await rpc(helper, 'queue.pause', { agent: 'helper2' })).result.summary.paused).toBe(true);
  });

  it('summaries carry message ids only from channels the reader shares with the agent; counts stay whole', async () => {
    const helper = await h.agent('helper');
    const alice = await h.person('alice');
    const bob = await h.person('bob');
    await createChannel(h.ctx, h.owner, { name: 'bobs', members: ['bob', 'helper'] });
    const blocked = await sendMessage(h.ctx, alice, { to: 'helper', body: 'alice: first, will fail' });
    await returnEntry(helper, blocked.message_id);
    const newest = await sendMessage(h.ctx, alice, { to: 'helper', body: 'alice: private plan' });

    const forAlice = (await rpc(alice, 'queue.summary', { agent: 'helper' })).result;
    expect(forAlice.newestPersonMessageId).toBe(newest.message_id);
    expect(forAlice.blockingReturnedMessageId).toBe(blocked.message_id);

    const forBob = (await rpc(bob, 'queue.summary', { agent: 'helper' })).result;
    expect(forBob.newestPersonMessageId).toBeNull();
    expect(forBob.blockingReturnedMessageId).toBeNull();
    expect(forBob.counts).toEqual(forAlice.counts);
    expect(forBob.total).toBe(2);
    expect(forBob.resumeAvailable).toBe(true);
    // The steering replies carry the same reader's view (pausing the whole queue takes a manager).
    expect((await rpc(bob, 'queue.pause', { agent: 'helper' })).error?.data.code).toBe('denied');
    await addAgentManager(h.ctx, h.owner, 'helper', 'bob');
    const paused = (await rpc(bob, 'queue.pause', { agent: 'helper' })).result.summary;
    expect(paused.newestPersonMessageId).toBeNull();
    expect(paused.blockingReturnedMessageId).toBeNull();
  });

  it('a person in no shared channel cannot resume or withdraw a card from a conversation they are not in', async () => {
    const helper = await h.agent('helper');
    const alice = await h.person('alice');
    const bob = await h.person('bob');
    await createChannel(h.ctx, h.owner, { name: 'bobs', members: ['bob', 'helper'] });
    const sent = await sendMessage(h.ctx, alice, { to: 'helper', body: 'alice only' });
    await returnEntry(helper, sent.message_id);
    const before = await snapshotStore(h.ctx);
    for (const method of ['queue.resume', 'queue.withdraw']) {
      const reply = await rpc(bob, method, { agent: 'helper', messageId: sent.message_id });
      expect(reply.error?.data.code, method).toBe('not_member');
      expect(await snapshotStore(h.ctx), method).toEqual(before);
    }
  });

  it("creating 2,500 channels naming a person only invites them: the person's channel.list still answers", async () => {
    const spammer = await h.agent('spammer');
    const alice = await h.person('alice');
    const count = backend === 'sqlite' ? 2500 : 60;
    let refused = 0;
    for (let i = 0; i < count; i++) {
      try {
        await createChannel(h.ctx, spammer, { name: `spam-${i}`, members: ['alice'] });
      } catch (err) {
        expect(err).toMatchObject({ code: 'denied' });
        refused++;
      }
    }
    // At most 20 unanswered invitations from one inviter to one person.
    expect(refused).toBe(count - 20);
    const list = await rpc(alice, 'channel.list', {});
    expect(list.result.channels).toEqual([]);
    const invitations = (await rpc(alice, 'channel.invitations', {})).result;
    expect(invitations.invitations).toHaveLength(20);
    expect(invitations.invitations[0].invitedBy.name).toBe('spammer');
  });

  it('channel.list pages stay within the reply budget and visit every channel exactly once', async () => {
    const alice = await h.person('alice');
    await h.agent('helper');
    await h.manage('helper', 'alice'); // only its managers add an agent to a group
    for (let i = 0; i < 130; i++) {
      await createChannel(h.ctx, alice, { name: `room-${String(i).padStart(3, '0')}`, members: ['helper'] });
    }
    const replyBytes = 6000;
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const reply = await rpc(alice, 'channel.list', cursor ? { cursor, limit: 100 } : { limit: 100 }, {
        replyBytes,
      });
      expect(reply.result, JSON.stringify(reply.error)).toBeDefined();
      expect(Buffer.byteLength(JSON.stringify(reply))).toBeLessThanOrEqual(replyBytes);
      seen.push(...reply.result.channels.map((c: Json) => c.name));
      cursor = reply.result.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThan(2);
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((n) => n.startsWith('room-'))).toHaveLength(130);
    // A cursor is bound to its caller.
    const page = (await rpc(alice, 'channel.list', { limit: 1 })).result;
    const other = await rpc(h.owner, 'channel.list', { cursor: page.nextCursor });
    expect(other.error?.data.code).toBe('invalid_cursor');
    expect((await listAllChannels(h.ctx, alice)).length).toBe(seen.length);
  });

  it('a member leaves a group; an agent that leaves keeps its pending entries, unlisted until it rejoins', async () => {
    const helper = await h.agent('helper');
    const alice = await h.person('alice');
    await h.manage('helper', 'alice');
    const team = await createChannel(h.ctx, alice, { name: 'team', members: ['helper'] });
    const sent = await sendMessage(h.ctx, alice, { to: '#team', body: 'for the team' });
    const left = await rpc(helper, 'channel.leave', { channel_id: team.id });
    expect(left.result).toMatchObject({ id: team.id, left: true });
    expect((await rpc(helper, 'channel.history', { channelId: team.id })).error?.data.code).toBe(
      'not_member',
    );
    // alice no longer shares a channel with helper: as its manager she sees counts, no message id.
    const summary = (await rpc(alice, 'queue.summary', { agent: 'helper' })).result;
    expect(summary.newestPersonMessageId).toBeNull();
    expect((await rpc(alice, 'queue.page', { agent: 'helper' })).result.rows).toEqual([]);
    const entry = await findInboxEntry(
      h.ctx.store.db,
      helper.id,
      (await findMessageById(h.ctx.store.db, sent.message_id))!.seq,
    );
    expect(entry?.state).toBe('waiting');
    // Leaving twice: not a member any more; nothing changes.
    const before = await snapshotStore(h.ctx);
    expect((await rpc(helper, 'channel.leave', { channel_id: team.id })).error?.data.code).toBe('not_member');
    expect(await snapshotStore(h.ctx)).toEqual(before);
    // Rejoin: alice adds the agent back, and its entry is listed again.
    await rpc(alice, 'channel.addMember', { channelId: team.id, member: 'helper' });
    const page = (await rpc(alice, 'queue.page', { agent: 'helper' })).result;
    expect(page.rows.map((r: Json) => r.messageId)).toEqual([sent.message_id]);
  });

  it('a DM cannot be left, and nobody can be removed from one', async () => {
    await h.agent('helper');
    const sent = await sendMessage(h.ctx, h.owner, { to: 'helper', body: 'hi' });
    const before = await snapshotStore(h.ctx);
    expect((await rpc(h.owner, 'channel.leave', { channel_id: sent.channel_id })).error?.data.code).toBe(
      'invalid_params',
    );
    expect(
      (await rpc(h.owner, 'channel.removeMember', { channelId: sent.channel_id, member: 'helper' })).error
        ?.data.code,
    ).toBe('denied');
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('only the creator removes others; anyone removes themselves', async () => {
    const alice = await h.person('alice');
    const bob = await h.person('bob');
    await h.agent('helper');
    await h.manage('helper', 'alice');
    const team = await createChannel(h.ctx, alice, { name: 'team', members: ['helper', 'bob'] });
    expect(team).toMatchObject({ joined: ['alice', 'helper'], invited: ['bob'] });
    await acceptInvitation(h.ctx, bob, team.id);
    const before = await snapshotStore(h.ctx);
    const refused = await rpc(bob, 'channel.removeMember', { channelId: team.id, member: 'helper' });
    expect(refused.error?.data.code).toBe('denied');
    expect(await snapshotStore(h.ctx)).toEqual(before);
    expect(
      (await rpc(alice, 'channel.removeMember', { channelId: team.id, member: 'helper' })).result,
    ).toEqual({
      removed: true,
    });
    expect((await rpc(bob, 'channel.removeMember', { channelId: team.id, member: 'bob' })).result).toEqual({
      removed: true,
    });
    const members = (await rpc(alice, 'channel.list', {})).result.channels[0].members.map(
      (m: Json) => m.name,
    );
    expect(members).toEqual(['alice']);
  });

  it('a person an agent names is only invited: no member until they accept; declining changes nothing else', async () => {
    const bot = await h.agent('bot');
    const bob = await h.person('bob');
    const carol = await h.person('carol');
    const team = await createChannel(h.ctx, bot, { name: 'team', members: ['bob', 'carol'] });
    expect(team.invited).toEqual(['bob', 'carol']);
    expect(team.joined).toEqual(['bot']);
    await sendMessage(h.ctx, bot, { to: '#team', body: 'secret plan' });
    expect((await rpc(bob, 'channel.history', { channelId: team.id })).error?.data.code).toBe('not_member');
    expect((await rpc(bob, 'message.send', { to: team.id, body: 'x' })).error?.data.code).toBe('not_member');
    const accepted = await rpc(bob, 'channel.accept', { channel_id: team.id });
    expect(accepted.result).toMatchObject({ id: team.id, name: 'team' });
    expect((await rpc(bob, 'channel.history', { channelId: team.id })).result.messages).toHaveLength(1);
    await rpc(carol, 'channel.decline', { channel_id: team.id });
    expect((await rpc(carol, 'channel.invitations', {})).result.invitations).toEqual([]);
    const before = await snapshotStore(h.ctx);
    expect((await rpc(carol, 'channel.accept', { channel_id: team.id })).error?.data.code).toBe('not_found');
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('a person another person adds is invited too (one invitation), and the owner adding them makes it moot', async () => {
    const bot = await h.agent('bot');
    const bob = await h.person('bob');
    const carol = await h.person('carol');
    const team = await createChannel(h.ctx, bot, { name: 'team', members: ['bob', 'carol', 'owner'] });
    await rpc(bob, 'channel.accept', { channel_id: team.id });
    const added = await rpc(bob, 'channel.addMember', { channelId: team.id, member: 'carol' });
    expect(added.result).toMatchObject({ joined: [], invited: ['carol'] });
    expect((await rpc(carol, 'channel.invitations', {})).result.invitations).toHaveLength(1);
    await rpc(h.owner, 'channel.accept', { channel_id: team.id });
    const byOwner = await rpc(h.owner, 'channel.addMember', { channelId: team.id, member: 'carol' });
    expect(byOwner.result).toMatchObject({ joined: ['carol'], invited: [] });
    expect((await rpc(carol, 'channel.invitations', {})).result.invitations).toEqual([]);
    expect((await rpc(carol, 'channel.history', { channelId: team.id })).result.status).toBe('page');
    // An agent adding a person who already left only invites them again.
    await rpc(carol, 'channel.leave', { channel_id: team.id });
    const again = await rpc(bot, 'channel.addMember', { channelId: team.id, member: 'carol' });
    expect(again.result).toMatchObject({ joined: [], invited: ['carol'] });
    expect((await rpc(carol, 'channel.history', { channelId: team.id })).error?.data.code).toBe('not_member');
  });
});
