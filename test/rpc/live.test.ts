import { afterEach, describe, expect, it } from 'vitest';
import { removeMember } from '../../src/host/channels/channels.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { runCli } from '../support/host.js';
import { openServedHost, type ServedHost } from './support.js';

async function until(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('live updates', () => {
  let h: ServedHost | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('a write by the CLI in another process reaches a WebSocket subscriber', async () => {
    h = await openServedHost();
    await h.agent('helper');
    const client = await h.client();
    const dm = await client.ok('message.send', { to: 'helper', body: 'first, over rpc' });
    await client.ok('subscribe', { queues: ['helper'], channels: [dm.channel_id] });

    const cli = await runCli(['message', 'send', 'helper', '-m', 'written by the CLI'], { home: h.home });
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const id = cli.stdout.trim();

    const message = await client.waitFor(
      (n) => n.method === 'channel.message' && n.params.message.messageId === id,
    );
    expect(message.params).toMatchObject({ channelId: dm.channel_id, kind: 'message.created' });
    expect(message.params.message.body).toBe('written by the CLI');
    const changed = await client.waitFor((n) => n.method === 'queue.changed' && n.params.summary.total === 2);
    expect(changed.params.summary).toMatchObject({ agent: 'helper', newestPersonMessageId: id });
  });

  it('a subscriber that does not read through 10,000 commits gets only the latest summary, in bounded memory', async () => {
    // This client stops reading for as long as 10,000 commits take: keep it connected that long.
    h = await openServedHost({ limits: { stalledSocketMs: 600_000 } });
    const host = h;
    await host.agent('helper');
    const big = await sendMessage(host.ctx, host.owner, { to: 'helper', body: 'x'.repeat(2_000_000) });
    const client = await host.client();
    await client.ok('subscribe', { queues: ['helper'] });
    await client.waitFor((n) => n.method === 'queue.changed');
    const [connection] = [...host.server.connections];
    if (!connection) throw new Error('no server connection');

    // Back the socket up: stop reading, then ask for replies much larger than the socket buffers.
    client.ws.pause();
    const reads = Array.from({ length: 40 }, (_, i) =>
      client.call('queue.read', { agent: 'helper', messageId: big.message_id }, `fill-${i}`),
    );
    // Replies stop being produced once the socket is over the high-water mark: the rest wait.
    await until(
      () => connection.pendingRequests > 0 && connection.bufferedAmount > host.server.limits.highWaterBytes,
    );
    await until(() => connection.outbox.pendingSize() === 0);
    const bufferedBefore = connection.bufferedAmount;
    const revisionBefore = (
      await host.ctx.store.db.selectFrom('queues').select('revision').executeTakeFirstOrThrow()
    ).revision;
    const heapBefore = process.memoryUsage().heapUsed;

    let maxPending = 0;
    for (let i = 0; i < 10_000; i++) {
      await sendMessage(host.ctx, host.owner, { to: 'helper', body: `commit ${i}` });
      if (i % 100 === 0) {
        await host.server.hub.pump();
        maxPending = Math.max(maxPending, connection.outbox.pendingSize());
      }
    }
    await host.server.hub.pump();
    maxPending = Math.max(maxPending, connection.outbox.pendingSize());
    const heapGrowthMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
    const finalQueue = await host.ctx.store.db.selectFrom('queues').selectAll().executeTakeFirstOrThrow();

    // Held: at most one pending re-read for the agent, and not one byte more queued on the socket.
    expect(maxPending).toBe(1);
    expect(connection.bufferedAmount).toBe(bufferedBefore);
    expect(heapGrowthMb).toBeLessThan(64);
    console.log(
      `heap growth over 10,000 commits while backed up: ${heapGrowthMb.toFixed(1)} MiB; held items: ${maxPending}`,
    );

    client.ws.resume();
    await Promise.all(reads);
    const latest = await client.waitFor(
      (n) => n.method === 'queue.changed' && n.params.summary.revision === finalQueue.revision,
      30_000,
    );
    expect(latest.params.summary.total).toBe(finalQueue.waiting + finalQueue.returned);
    await new Promise((r) => setTimeout(r, 200));
    const after = client.notifications.filter(
      (n) => n.method === 'queue.changed' && n.params.summary.revision > revisionBefore,
    );
    expect(after).toHaveLength(1);
    expect(connection.outbox.pendingSize()).toBe(0);
  }, 120_000);

  it('a subscriber who leaves the channel hears that the subscriptions ended, and nothing more', async () => {
    h = await openServedHost();
    const host = h;
    await host.agent('helper');
    await host.person('guest');
    const owner = await host.client();
    const ops = await owner.ok('channel.create', { name: 'ops', members: ['helper', 'guest'] });
    const guest = await host.client('guest');
    await guest.ok('subscribe', { queues: ['helper'], channels: [ops.id] });
    await owner.ok('message.send', { to: ops.id, body: 'before' });
    await guest.waitFor((n) => n.method === 'channel.message' && n.params.message.body === 'before');

    await removeMember(host.ctx, host.owner, ops.id, 'guest');
    const secret = await owner.ok('message.send', { to: ops.id, body: 'after' });
    await guest.waitFor((n) => n.method === 'subscription.ended' && n.params.channel === ops.id);
    await guest.waitFor((n) => n.method === 'subscription.ended' && n.params.queue === 'helper');
    await owner.ok('message.send', { to: ops.id, body: 'later' });
    await new Promise((r) => setTimeout(r, 200));
    const heard = guest.notifications
      .filter((n) => n.method === 'channel.message')
      .map((n) => n.params.message.messageId);
    expect(heard).not.toContain(secret.message_id);
    expect(guest.notifications.filter((n) => n.method === 'subscription.ended')).toHaveLength(2);
    expect((await guest.call('queue.summary', { agent: 'helper' })).error?.data.code).toBe('denied');
  });

  it('detaching releases what the outbox held', async () => {
    h = await openServedHost();
    const host = h;
    await host.agent('helper');
    await sendMessage(host.ctx, host.owner, { to: 'helper', body: 'hello' });
    const client = await host.client();
    await client.ok('subscribe', { queues: ['helper'] });
    const [connection] = [...host.server.connections];
    if (!connection) throw new Error('no server connection');
    connection.outbox.queueChanged('someone');
    client.close();
    await until(() => host.server.connections.size === 0);
    expect(connection.outbox.pendingSize()).toBe(0);
  });
});
