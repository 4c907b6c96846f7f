// Agents are added by their managers (issue 25 item 3), on both backends: naming an agent in a new
// group, or adding one to a group, is for the owner and the agent's managers. Everyone else — an
// outsider, a non-member, a removed member, a member who does not manage it, a removed manager,
// another agent — is refused with one coded line and nothing changes (a snapshot of every table and
// sequence). DMs stay open.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addAgentManager, removeAgentManager } from '../../src/host/agents/agent-managers.js';
import { addMember, createChannel, removeMember } from '../../src/host/channels/channels.js';
import { acceptInvitation } from '../../src/host/channels/invitations.js';
import { type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

describe.each(backendsUnderTest())('agents are added by their managers (%s)', (backend) => {
  let h: ConformanceHost;
  let team: string;
  const who = new Map<string, Principal>();

  beforeAll(async () => {
    h = await openConformanceHost(backend, 'agentadd');
    for (const name of ['meg', 'rita', 'bob', 'mallory', 'nina', 'rem', 'dee']) await h.person(name);
    await h.agent('helper');
    await h.agent('other');
    await addAgentManager(h.ctx, h.owner, 'helper', 'meg');
    await addAgentManager(h.ctx, h.owner, 'helper', 'rita');
    await removeAgentManager(h.ctx, h.owner, 'helper', 'rita');
    for (const name of ['meg', 'rita', 'bob', 'mallory', 'nina', 'rem', 'dee', 'other', 'helper'])
      who.set(name, await resolvePrincipal(h.ctx, name));
    const p = (name: string) => who.get(name) as Principal;
    // meg's #team: bob and rita (the removed manager) are members, rem was and was removed, and
    // the agent `other` is in it (the owner added it); nina is in another channel only.
    team = (await createChannel(h.ctx, p('meg'), { name: 'team', members: ['bob', 'rita', 'rem'] })).id;
    for (const name of ['bob', 'rita', 'rem']) await acceptInvitation(h.ctx, p(name), team);
    await removeMember(h.ctx, p('meg'), team, 'rem');
    await createChannel(h.ctx, h.owner, { name: 'elsewhere', members: ['nina'] });
    await addMember(h.ctx, h.owner, '#elsewhere', 'other');
    await createChannel(h.ctx, h.owner, { name: 'side', members: ['meg', 'other'] });
    await sendMessage(h.ctx, p('dee'), { to: 'helper', body: 'dee merely DMs helper' });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const refused: [label: string, caller: string, addCode: 'not_member' | 'denied'][] = [
    ['an outsider', 'mallory', 'not_member'],
    ['a non-member', 'nina', 'not_member'],
    ['a removed member', 'rem', 'not_member'],
    ['a member who does not manage it', 'bob', 'denied'],
    ['a removed manager', 'rita', 'denied'],
    ['a person who merely DMs it', 'dee', 'not_member'],
    ['another agent', 'other', 'not_member'],
  ];

  for (const [label, caller, addCode] of refused) {
    it(`${label} cannot name helper in a new group, nor add it to #team; nothing changes`, async () => {
      const as = who.get(caller) as Principal;
      const before = await snapshotStore(h.ctx);
      for (const members of [['helper'], ['bob', 'helper'], ['helper', 'other']]) {
        const err = await createChannel(h.ctx, as, { name: `mine-${caller}`, members }).catch((e) => e);
        expect(err, JSON.stringify(members)).toMatchObject({ code: 'denied' });
        expect(err.message).toBe(
          'only the owner or a manager of helper may add it to a channel (sluice agent managers helper names them); nothing was changed',
        );
        expect(await snapshotStore(h.ctx)).toEqual(before);
      }
      await expect(addMember(h.ctx, as, team, 'helper')).rejects.toMatchObject({ code: addCode });
      await expect(addMember(h.ctx, as, '#team', 'helper')).rejects.toMatchObject({ code: addCode });
      expect(await snapshotStore(h.ctx)).toEqual(before);
    });
  }

  it('a manager names helper in a new group and adds it to one: it joins at once, people are invited', async () => {
    const meg = who.get('meg') as Principal;
    const made = await createChannel(h.ctx, meg, { name: 'megs', members: ['helper', 'bob'] });
    expect(made).toMatchObject({ joined: ['meg', 'helper'], invited: ['bob'] });
    expect(await addMember(h.ctx, meg, team, 'helper')).toMatchObject({ joined: ['helper'], invited: [] });
    // Adding it again is the same, and a manager removed since may not.
    expect(await addMember(h.ctx, meg, team, 'helper')).toMatchObject({ joined: ['helper'], invited: [] });
    await removeMember(h.ctx, meg, team, 'helper');
  });

  it('the owner adds any agent; an agent names only itself', async () => {
    const owners = await createChannel(h.ctx, h.owner, { name: 'owners', members: ['helper', 'other'] });
    expect(owners.joined).toEqual(['owner', 'helper', 'other']);
    const other = who.get('other') as Principal;
    const own = await createChannel(h.ctx, other, { name: 'others-own', members: ['other'] });
    expect(own.joined).toEqual(['other']);
  });

  it('DMs stay open: anyone may write to helper without managing it', async () => {
    const sent = await sendMessage(h.ctx, who.get('mallory') as Principal, { to: 'helper', body: 'hello' });
    expect(sent.message_id).toEqual(expect.any(String));
  });
});
