import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import WsClient, { type WebSocket, WebSocketServer } from 'ws';
import { backoffDelay, RpcClient, RpcError, type SocketLike, WS_REFUSED_AT_CAP } from '../../web/src/rpc.js';
import { hostileString } from '../core/arbitraries.js';

interface Frame {
  id?: number;
  method: string;
  params?: unknown;
}

/** A loopback WebSocket server whose behaviour each test scripts per received frame. */
async function scriptedServer(onFrame: (frame: Frame, socket: WebSocket) => void) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const sockets: WebSocket[] = [];
  const frames: Frame[] = [];
  server.on('connection', (socket) => {
    sockets.push(socket);
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as Frame;
      frames.push(frame);
      onFrame(frame, socket);
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}/rpc`,
    sockets,
    frames,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const reply = (socket: WebSocket, id: number | undefined, result: unknown) =>
  socket.send(JSON.stringify({ jsonrpc: '2.0', id, result }));

const clients: RpcClient[] = [];
const servers: { close(): Promise<void> }[] = [];

function clientFor(url: string, options: Partial<ConstructorParameters<typeof RpcClient>[0]> = {}) {
  const client = new RpcClient({
    url,
    connect: (u) => new WsClient(u) as unknown as SocketLike,
    initialDelayMs: 20,
    maxDelayMs: 100,
    random: () => 0.5,
    // Off unless a test is about it: a probe would add frames to what other tests count.
    heartbeatMs: 0,
    ...options,
  });
  clients.push(client);
  client.start();
  return client;
}

async function eventually(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const server of servers.splice(0)) await server.close();
});

describe('the page’s JSON-RPC client', () => {
  it('matches replies to requests by id, even when the host answers out of order', async () => {
    const held: { frame: Frame; socket: WebSocket }[] = [];
    const server = await scriptedServer((frame, socket) => {
      held.push({ frame, socket });
      if (held.length === 3)
        for (const h of held.reverse()) reply(h.socket, h.frame.id, { echo: h.frame.params });
    });
    servers.push(server);
    const client = clientFor(server.url);
    const results = await Promise.all(
      [1, 2, 3].map((n) => client.call<{ echo: { n: number } }>('echo', { n })),
    );
    expect(results.map((r) => r.echo.n)).toEqual([1, 2, 3]);
    expect(new Set(server.frames.map((f) => f.id)).size).toBe(3);
  });

  it('holds requests made before the socket opens and sends them in order once it does', async () => {
    const server = await scriptedServer((frame, socket) => reply(socket, frame.id, frame.method));
    servers.push(server);
    const client = clientFor(server.url);
    expect(client.status).toBe('connecting');
    const answers = await Promise.all([client.call('a'), client.call('b'), client.call('c')]);
    expect(answers).toEqual(['a', 'b', 'c']);
    expect(server.frames.map((f) => f.method)).toEqual(['a', 'b', 'c']);
  });

  it('rejects an error reply with the host’s numeric code, message and data', async () => {
    const server = await scriptedServer((frame, socket) =>
      socket.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: frame.id,
          error: {
            code: -32602,
            message: 'unknown field "x" in queue.page params',
            data: { code: 'invalid_params', field: 'x' },
          },
        }),
      ),
    );
    servers.push(server);
    const client = clientFor(server.url);
    const failure = await client.call('queue.page', { x: 1 }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RpcError);
    expect(failure).toMatchObject({ code: -32602, data: { code: 'invalid_params', field: 'x' } });
  });

  it('delivers notifications to the handlers registered for their method only', async () => {
    const server = await scriptedServer((frame, socket) => {
      socket.send(
        JSON.stringify({ jsonrpc: '2.0', method: 'queue.changed', params: { summary: { total: 7 } } }),
      );
      socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'channel.message', params: { channelId: 'c1' } }));
      reply(socket, frame.id, 'ok');
    });
    servers.push(server);
    const client = clientFor(server.url);
    const queueEvents: unknown[] = [];
    const channelEvents: unknown[] = [];
    client.on('queue.changed', (p) => queueEvents.push(p));
    const off = client.on('channel.message', (p) => channelEvents.push(p));
    off();
    await client.call('ping');
    expect(queueEvents).toEqual([{ summary: { total: 7 } }]);
    expect(channelEvents).toEqual([]);
  });

  it('fails a request in flight when the socket drops, reconnects, and re-sends its subscriptions', async () => {
    let dropNext = true;
    const server = await scriptedServer((frame, socket) => {
      if (frame.method === 'slow' && dropNext) {
        dropNext = false;
        socket.terminate();
        return;
      }
      reply(socket, frame.id, { ok: true });
    });
    servers.push(server);
    const client = clientFor(server.url);
    const reconnects: boolean[] = [];
    client.onOpen((reconnected) => reconnects.push(reconnected));
    client.subscribe({ queues: ['helper'] });
    const failure = await client.call('slow').catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'disconnected' });
    await eventually(() => reconnects.length === 2, 'the reconnect');
    expect(reconnects).toEqual([false, true]);
    await expect(client.call('after')).resolves.toEqual({ ok: true });
    const subscribes = server.frames.filter((f) => f.method === 'subscribe');
    expect(subscribes.map((f) => f.params)).toEqual([{ queues: ['helper'] }, { queues: ['helper'] }]);
    expect(server.sockets).toHaveLength(2);
  });

  it('keeps backing off while the host refuses each socket at its per-principal cap (close 4429)', async () => {
    const server = await scriptedServer(() => {});
    const opened: number[] = [];
    const wss = server as unknown as { sockets: WebSocket[] };
    servers.push(server);
    // Every socket is accepted and closed at once with 4429, as the host does at the cap.
    const refuseAll = setInterval(() => {
      for (const socket of wss.sockets.splice(0)) {
        opened.push(Date.now());
        socket.close(WS_REFUSED_AT_CAP, 'at most 32 WebSockets per principal are open');
      }
    }, 1);
    try {
      clientFor(server.url, { initialDelayMs: 20, maxDelayMs: 10_000, random: () => 0.5 });
      await eventually(() => opened.length >= 6, 'six refused sockets');
    } finally {
      clearInterval(refuseAll);
    }
    // Delays 10, 20, 40, 80, 160 ms (half of a doubling ceiling): at least 310 ms between the first
    // and the sixth socket. Resetting the backoff on each refused open would take about 50 ms.
    expect(opened[5]! - opened[0]!).toBeGreaterThanOrEqual(300);
  });

  it('unsubscribes only when the last holder of identical params lets go', async () => {
    const server = await scriptedServer((frame, socket) => reply(socket, frame.id, {}));
    servers.push(server);
    const client = clientFor(server.url);
    await client.call('hello');
    const first = client.subscribe({ channels: ['c1'] });
    const second = client.subscribe({ channels: ['c1'] });
    first();
    first();
    await client.call('sync');
    expect(server.frames.filter((f) => f.method === 'unsubscribe')).toHaveLength(0);
    second();
    await client.call('sync');
    expect(server.frames.filter((f) => f.method === 'subscribe')).toHaveLength(1);
    expect(server.frames.filter((f) => f.method === 'unsubscribe').map((f) => f.params)).toEqual([
      { channels: ['c1'] },
    ]);
  });

  it('times out a request the host never answers, and close() rejects what is still waiting', async () => {
    const server = await scriptedServer(() => {});
    servers.push(server);
    const client = clientFor(server.url, { requestTimeoutMs: 50 });
    await expect(client.call('never')).rejects.toMatchObject({ code: 'timeout' });
    const waiting = client.call('also-never');
    client.close();
    await expect(waiting).rejects.toMatchObject({ code: 'closed' });
    await expect(client.call('after-close')).rejects.toMatchObject({ code: 'closed' });
  });

  it('ignores hostile frames without failing or resolving the wrong request', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileString(200), { maxLength: 8 }), async (junk) => {
        const server = await scriptedServer((frame, socket) => {
          for (const text of junk) socket.send(text);
          socket.send(JSON.stringify({ jsonrpc: '2.0', id: (frame.id ?? 0) + 1000, result: 'not yours' }));
          socket.send(JSON.stringify({ jsonrpc: '2.0', id: String(frame.id), result: 'string id' }));
          reply(socket, frame.id, 'yours');
        });
        const client = clientFor(server.url);
        try {
          await expect(client.call('x')).resolves.toBe('yours');
        } finally {
          client.close();
          await server.close();
        }
      }),
      { numRuns: 15 },
    );
  });
});

describe('reconnect backoff', () => {
  it('stays within half to all of the capped exponential ceiling, for any attempt and jitter', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 120_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, initial, max, jitter) => {
          const ceiling = Math.min(max, initial * 2 ** Math.min(attempt, 30));
          const delay = backoffDelay(attempt, initial, max, () => jitter);
          expect(delay).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
          expect(delay).toBeLessThanOrEqual(Math.ceil(ceiling));
          expect(Number.isFinite(delay)).toBe(true);
        },
      ),
    );
  });

  it('doubles until the cap', () => {
    const delays = [0, 1, 2, 3, 4, 5].map((a) => backoffDelay(a, 100, 1_000, () => 0.999999));
    expect(delays).toEqual([100, 200, 400, 800, 1000, 1000]);
  });
});

describe('the heartbeat', () => {
  it('asks a quiet host something cheap, stays open while it answers, reads stalled while it does not', async () => {
    let answering = true;
    const server = await scriptedServer((frame, socket) => {
      if (answering) reply(socket, frame.id, {});
    });
    servers.push(server);
    const statuses: string[] = [];
    const client = clientFor(server.url, { heartbeatMs: 50, stallAfterMs: 400, dropAfterMs: 60_000 });
    client.onStatus((status) => statuses.push(status));
    await eventually(() => server.frames.filter((f) => f.method === 'host.hello').length >= 3, 'probes');
    expect(client.status).toBe('open');
    answering = false;
    await eventually(() => client.status === 'stalled', 'stalled');
    answering = true;
    await eventually(() => client.status === 'open', 'open again');
    // The same socket all along: a slow host is not a dropped one.
    expect(server.sockets.length).toBe(1);
    // (A loaded machine may also be slow to answer before: stalled can come more than once.)
    expect(statuses[0]).toBe('open');
    expect(statuses).toContain('stalled');
    expect(statuses.at(-1)).toBe('open');
  });

  it('gives up a socket that stays silent, fails what it carried and opens another', async () => {
    let answering = false;
    const server = await scriptedServer((frame, socket) => {
      if (answering) reply(socket, frame.id, { ok: true });
    });
    servers.push(server);
    const client = clientFor(server.url, { heartbeatMs: 100, stallAfterMs: 300, dropAfterMs: 1_000 });
    await eventually(() => client.status === 'open', 'open');
    const lost = client.call('queue.summary', { agent: 'helper' }).catch((err: unknown) => err);
    await eventually(() => server.sockets.length >= 2, 'a second socket');
    const err = await lost;
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).code).toBe('disconnected');
    answering = true;
    await eventually(() => client.status === 'open', 'open on the new socket');
    expect(await client.call('queue.summary', { agent: 'helper' })).toEqual({ ok: true });
  });
});
