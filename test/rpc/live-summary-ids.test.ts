// Live `queue.changed` pushes follow the summary rule: a subscriber sees the newest person
// message's id only when it is from a channel the subscriber shares with the agent (issue 12).
import { afterEach, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openServedHost, type ServedHost } from './support.js';

describe('live queue summaries', () => {
  let h: ServedHost | undefined;
  afterEach(async () => {
    await h?.close();
  });

  it('carry message ids only from channels the subscriber shares with the agent', async () => {
    h = await openServedHost();
    await h.agent('helper');
    const alice = await h.person('alice');
    const bob = await h.person('bob');
    await createChannel(h.ctx, h.owner, { name: 'bobs', members: ['bob', 'helper'] });
    await sendMessage(h.ctx, alice, { to: 'helper', body: 'hello from alice' });
    const aliceClient = await h.client('alice');
    const bobClient = await h.client('bob');
    await aliceClient.ok('subscribe', { queues: ['helper'] });
    await bobClient.ok('subscribe', { queues: ['helper'] });

    const sent = await sendMessage(h.ctx, alice, { to: 'helper', body: 'alice, private' });
    const forAlice = await aliceClient.waitFor(
      (n) => n.method === 'queue.changed' && n.params.summary.total === 2,
    );
    const forBob = await bobClient.waitFor(
      (n) => n.method === 'queue.changed' && n.params.summary.total === 2,
    );
    expect(forAlice.params.summary.newestPersonMessageId).toBe(sent.message_id);
    expect(forBob.params.summary.newestPersonMessageId).toBeNull();
    expect(forBob.params.summary.counts).toEqual(forAlice.params.summary.counts);
    // bob's own message in the channel he shares is his to see.
    const own = await sendMessage(h.ctx, bob, { to: '#bobs', body: 'bob here' });
    const later = await bobClient.waitFor(
      (n) => n.method === 'queue.changed' && n.params.summary.total === 3,
    );
    expect(later.params.summary.newestPersonMessageId).toBe(own.message_id);
  });
});
