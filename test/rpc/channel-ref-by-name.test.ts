// Channel methods take a channel id or `#name`, as the CLI does. `channel.addMember` with `#name`
// used to commit the change and then answer `not_found` (its reply looked the channel up by id):
// a client that retried added twice, one that believed the error thought nothing happened.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { addPrincipal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { snapshotStore } from '../support/store-snapshot.js';
import { openServedHost, type ServedHost } from './support.js';

describe('channel methods by #name', () => {
  let host: ServedHost;
  let teamId: string;
  beforeAll(async () => {
    host = await openServedHost();
    await addPrincipal(host.ctx, { name: 'alice', kind: 'person' });
    await addPrincipal(host.ctx, { name: 'helper', kind: 'agent' });
    const owner = await resolvePrincipal(host.ctx, 'owner');
    teamId = (await createChannel(host.ctx, owner, { name: 'team', members: [] })).id;
  });
  afterAll(() => host.close());

  it('channel.addMember with #name answers the change it committed', async () => {
    const client = await host.client('owner');
    const reply = await client.call('channel.addMember', { channelId: '#team', member: 'helper' });
    expect(reply.error).toBeUndefined();
    expect(reply.result).toMatchObject({ id: teamId, name: 'team', kind: 'group', joined: ['helper'] });
  });

  it('channel.addMember with an unknown #name refuses and changes nothing', async () => {
    const client = await host.client('owner');
    const before = await snapshotStore(host.ctx);
    const reply = await client.call('channel.addMember', { channelId: '#nope', member: 'alice' });
    expect(reply.error?.data?.code).toBe('not_found');
    expect(await snapshotStore(host.ctx)).toEqual(before);
  });

  it('channel.removeMember with #name removes and says so', async () => {
    const client = await host.client('owner');
    const reply = await client.call('channel.removeMember', { channelId: '#team', member: 'helper' });
    expect(reply.result).toEqual({ removed: true });
    const page = await client.ok('channel.members', { channelId: teamId });
    expect(page.members.map((m: { name: string }) => m.name)).toEqual(['owner']);
  });
});
