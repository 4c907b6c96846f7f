// Consent before membership (issue 25 item 3), on both backends. The security review's flood: a
// person who shares no channel with anyone creates groups naming the owner and other people; they
// become members of none, and the owner's channel list is unaffected. Then the rules around it:
// who joins directly, who may accept, blocking an inviter, the caps — each refused call changing
// nothing (a snapshot of every table).
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addMember, createChannel, removeMember } from '../../src/host/channels/channels.js';
import { acceptInvitation, blockInviter } from '../../src/host/channels/invitations.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS } from '../../src/surfaces/rpc/methods.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect reply JSON field by field.
type Json = any;

describe.each(backendsUnderTest())('consent before membership (%s)', (backend) => {
  let h: ConformanceHost;
  const hosts = conformanceHostSeries(backend, 'consent');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
  });
  afterEach(async () => {
    await h.close();
  });

  async function rpc(principal: Principal, method: string, params: unknown = {}): Promise<Json> {
    const reply = await handleRpcText(
      { ctx: h.ctx, principal, limits: DEFAULT_RPC_LIMITS },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    );
    return JSON.parse(reply ?? 'null');
  }

  const channelNames = async (p: Principal): Promise<string[]> =>
    (await rpc(p, 'channel.list', { limit: 200 })).result.channels.map((c: Json) => c.name);

  it("the review's flood: 300 groups naming the owner and others make nobody a member; the owner's list is unaffected", async () => {
    const mallory = await h.person('mallory');
    const victims = ['alice', 'bob'];
    const victimPrincipals = [];
    for (const name of victims) victimPrincipals.push(await h.person(name));
    const carol = await h.person('carol');
    await createChannel(h.ctx, h.owner, { name: 'ops', members: ['carol'] });
    const count = backend === 'sqlite' ? 300 : 60;
    let refused = 0;
    for (let i = 0; i < count; i++) {
      try {
        await createChannel(h.ctx, mallory, { name: `spam-${i}`, members: ['owner', ...victims] });
      } catch (err) {
        expect(err).toMatchObject({ code: 'denied' });
        refused++;
      }
    }
    // 20 unanswered invitations from one inviter per person, then every further creation is refused.
    expect(refused).toBe(count - 20);
    expect(await channelNames(h.owner)).toEqual(['ops']);
    expect(await channelNames(carol)).toEqual(['ops']);
    for (const victim of victimPrincipals) {
      expect(await channelNames(victim), victim.name).toEqual([]);
      expect((await rpc(victim, 'channel.invitations')).result.invitations, victim.name).toHaveLength(20);
    }
    const invitations = (await rpc(h.owner, 'channel.invitations', { limit: 200 })).result.invitations;
    expect(invitations).toHaveLength(20);
    expect(new Set(invitations.map((i: Json) => i.invitedBy.name))).toEqual(new Set(['mallory']));
    // Nothing mallory posts reaches the owner before it accepts.
    const first = invitations[0].channel.id;
    await rpc(mallory, 'message.send', { to: first, body: 'click here' });
    expect((await rpc(h.owner, 'channel.history', { channelId: first })).error?.data.code).toBe('not_member');
    // One block drops them all, and later ones never arrive.
    const blocked = await rpc(h.owner, 'channel.block', { name: 'mallory' });
    expect(blocked.result).toEqual({ name: 'mallory', blocked: true, dropped: 20 });
    expect((await rpc(h.owner, 'channel.invitations', {})).result.invitations).toEqual([]);
  });

  it('a person a non-owner names or adds is invited: not a member, no messages, not listed, until they accept', async () => {
    const alice = await h.person('alice');
    const bob = await h.person('bob');
    await h.agent('helper');
    await h.manage('helper', 'alice'); // only its managers add an agent to a group
    const team = await createChannel(h.ctx, alice, { name: 'team', members: ['bob', 'helper'] });
    expect(team).toMatchObject({ joined: ['alice', 'helper'], invited: ['bob'] });
    await rpc(alice, 'message.send', { to: team.id, body: 'before bob accepted' });
    expect(await channelNames(bob)).toEqual([]);
    expect((await rpc(bob, 'channel.history', { channelId: team.id })).error?.data.code).toBe('not_member');
    expect((await rpc(bob, 'message.send', { to: team.id, body: 'x' })).error?.data.code).toBe('not_member');
    const members = (await rpc(alice, 'channel.members', { channelId: team.id })).result.members;
    expect(members.map((m: Json) => m.name).sort()).toEqual(['alice', 'helper']);
    // Adding one later is an invitation too.
    const carol = await h.person('carol');
    const added = await rpc(alice, 'channel.addMember', { channelId: team.id, member: 'carol' });
    expect(added.result).toMatchObject({ joined: [], invited: ['carol'] });
    expect(await channelNames(carol)).toEqual([]);
    // Accepting joins; the invitation is gone.
    expect((await rpc(bob, 'channel.accept', { channel_id: team.id })).result).toMatchObject({
      name: 'team',
    });
    expect(await channelNames(bob)).toEqual(['team']);
    expect((await rpc(bob, 'channel.invitations', {})).result.invitations).toEqual([]);
  });

  it('the owner adds people directly (a documented decision), and a person adding themself needs no invitation', async () => {
    const alice = await h.person('alice');
    const ops = await createChannel(h.ctx, h.owner, { name: 'ops', members: ['alice'] });
    expect(ops).toMatchObject({ joined: ['owner', 'alice'], invited: [] });
    expect(await channelNames(alice)).toEqual(['ops']);
    const own = await createChannel(h.ctx, alice, { name: 'mine', members: ['alice'] });
    expect(own).toMatchObject({ joined: ['alice'], invited: [] });
  });

  it("nobody accepts or declines someone else's invitation: outsider, non-member, removed member; nothing changes", async () => {
    const alice = await h.person('alice');
    await h.person('bob');
    const mallory = await h.person('mallory');
    const nina = await h.person('nina');
    const rem = await h.person('rem');
    await createChannel(h.ctx, h.owner, { name: 'elsewhere', members: ['nina'] });
    const team = await createChannel(h.ctx, alice, { name: 'team', members: ['bob', 'rem'] });
    await acceptInvitation(h.ctx, rem, team.id);
    await removeMember(h.ctx, alice, team.id, 'rem');
    const before = await snapshotStore(h.ctx);
    for (const [who, caller] of [
      ['outsider', mallory],
      ['non-member', nina],
      ['removed member', rem],
    ] as const) {
      for (const method of ['channel.accept', 'channel.decline']) {
        for (const ref of [team.id, '#team']) {
          const reply = await rpc(caller, method, { channel_id: ref });
          expect(reply.error?.data.code, `${who} ${method} ${ref}`).toBe('not_found');
          expect(await snapshotStore(h.ctx), `${who} ${method}`).toEqual(before);
        }
      }
      // Nor see it: their own invitation list is empty.
      expect((await rpc(caller, 'channel.invitations', {})).result.invitations, who).toEqual([]);
    }
  });

  it('a block drops the inviter’s invitations silently: the inviter sees the same reply; nothing is stored', async () => {
    const bob = await h.person('bob');
    const mallory = await h.person('mallory');
    const alice = await h.person('alice');
    await createChannel(h.ctx, mallory, { name: 'first', members: ['bob'] });
    await blockInviter(h.ctx, bob, 'mallory');
    expect((await rpc(bob, 'channel.blocked')).result.blocked).toMatchObject([
      { name: 'mallory', kind: 'person' },
    ]);
    expect((await rpc(bob, 'channel.invitations')).result.invitations).toEqual([]);
    // The blocked inviter's reply is the same as anyone's.
    const fromMallory = await rpc(mallory, 'channel.create', { name: 'second', members: ['bob'] });
    const fromAlice = await rpc(alice, 'channel.create', { name: 'third', members: ['bob'] });
    expect(fromMallory.result).toMatchObject({ joined: ['mallory'], invited: ['bob'] });
    expect(fromAlice.result).toMatchObject({ joined: ['alice'], invited: ['bob'] });
    const second = fromMallory.result.id;
    const beforeAdd = await snapshotStore(h.ctx);
    expect(
      (await rpc(mallory, 'channel.addMember', { channelId: second, member: 'bob' })).result,
    ).toMatchObject({
      invited: ['bob'],
    });
    expect((await snapshotStore(h.ctx)).invitations).toEqual(beforeAdd.invitations);
    const listed = (await rpc(bob, 'channel.invitations')).result.invitations;
    expect(listed.map((i: Json) => i.channel.name)).toEqual(['third']);
    // Unblocking lets later invitations through (the dropped ones stay dropped).
    expect((await rpc(bob, 'channel.unblock', { name: 'mallory' })).result).toEqual({
      name: 'mallory',
      unblocked: true,
    });
    expect((await rpc(bob, 'channel.unblock', { name: 'mallory' })).result.unblocked).toBe(false);
    await rpc(mallory, 'channel.create', { name: 'fourth', members: ['bob'] });
    const after = (await rpc(bob, 'channel.invitations')).result.invitations;
    expect(after.map((i: Json) => i.channel.name)).toEqual(['fourth', 'third']);
  });

  it('blocking yourself, the owner or nobody is one clear line, and nothing changes', async () => {
    const bob = await h.person('bob');
    const before = await snapshotStore(h.ctx);
    for (const [name, code] of [
      ['bob', 'invalid_params'],
      ['owner', 'invalid_params'],
      ['nobody-here', 'not_found'],
    ] as const) {
      const reply = await rpc(bob, 'channel.block', { name });
      expect(reply.error?.data.code, name).toBe(code);
      expect(reply.error.message.split('\n')).toHaveLength(1);
    }
    expect((await rpc(bob, 'channel.block', { name: 'x', extra: 1 })).error?.data.code).toBe(
      'invalid_params',
    );
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('an inviter holds at most maxPendingInvitationsPerInviter unanswered invitations in all', async () => {
    const small = { ...h.ctx, limits: { ...h.ctx.limits, maxPendingInvitationsPerInviter: 5 } };
    const mallory = await h.person('mallory');
    const names = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
    const [p1] = [await h.person('p1')];
    for (const name of names.slice(1)) await h.person(name);
    await createChannel(small, mallory, { name: 'a', members: names.slice(0, 5) });
    const before = await snapshotStore(h.ctx);
    await expect(createChannel(small, mallory, { name: 'b', members: ['p6'] })).rejects.toMatchObject({
      code: 'denied',
      message: expect.stringContaining('5 invitations still unanswered'),
    });
    expect(await snapshotStore(h.ctx)).toEqual(before);
    // An answer frees a place.
    expect((await rpc(p1, 'channel.decline', { channel_id: '#a' })).result).toEqual({ declined: true });
    await expect(addMember(small, mallory, '#a', 'p6')).resolves.toMatchObject({ invited: ['p6'] });
  });
});
