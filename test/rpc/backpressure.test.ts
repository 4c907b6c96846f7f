import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LiveHub, startLiveHub } from '../../src/host/live/live.js';
import { RpcConnection, type SocketLike } from '../../src/surfaces/rpc/connection.js';
import { DEFAULT_RPC_LIMITS, type RpcLimits } from '../../src/surfaces/rpc/methods.js';
import { openTestHost, type TestHost } from '../support/host.js';

/** A socket whose unsent bytes the test sets: the client reads only when the test says so. */
class UnreadSocket implements SocketLike {
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: string[] = [];
  paused = false;
  terminated = false;
  #checks = 0;
  #waiters: (() => void)[] = [];

  send(text: string): void {
    this.sent.push(text);
    this.bufferedAmount += Buffer.byteLength(text);
    this.#wake();
  }
  pause() {
    this.paused = true;
  }
  resume() {
    this.paused = false;
  }
  terminate() {
    this.terminated = true;
    this.readyState = 3;
    this.#wake();
  }
  /** Counts how often the connection looked at the buffer (so tests can wait for it to look). */
  get checks() {
    return this.#checks;
  }
  observeCheck() {
    this.#checks += 1;
    this.#wake();
  }
  #wake() {
    for (const w of this.#waiters.splice(0)) w();
  }
  /** Resolves once `cond` holds, re-checked whenever the connection touches the socket. */
  async until(cond: () => boolean): Promise<void> {
    while (!cond()) await new Promise<void>((r) => this.#waiters.push(r));
  }
}

/** Counts reads of `bufferedAmount` without changing what they see. */
function watched(socket: UnreadSocket): SocketLike {
  return new Proxy(socket, {
    get(target, prop, receiver) {
      if (prop === 'bufferedAmount') target.observeCheck();
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('WebSocket JSON-RPC backpressure', () => {
  let h: TestHost;
  let hub: LiveHub;
  beforeEach(async () => {
    h = await openTestHost();
    hub = await startLiveHub(h.ctx);
  });
  afterEach(async () => {
    hub.close();
    await h.close();
  });

  const connect = (socket: UnreadSocket, limits: Partial<RpcLimits> = {}) =>
    new RpcConnection({
      session: {
        ctx: h.ctx,
        principal: h.owner,
        limits: { ...DEFAULT_RPC_LIMITS, highWaterBytes: 1000, ...limits },
      },
      socket: watched(socket),
      hub,
    });
  const hello = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'host.hello' });

  it('produces no further replies while the socket holds more than the high-water mark, and resumes when it drains', async () => {
    const socket = new UnreadSocket();
    const conn = connect(socket);
    for (let i = 1; i <= 40; i++) conn.receive(hello(i));
    // The first reply pushes the buffer over 1,000 bytes; the rest wait for the client to read.
    await socket.until(() => socket.sent.length >= 1 && socket.checks >= 5);
    const producedWhileFull = socket.sent.length;
    expect(producedWhileFull).toBeLessThanOrEqual(2);
    expect(conn.pendingRequests).toBe(40 - producedWhileFull);
    // Requests beyond the queue bound stop the socket reading (TCP pushes back on the client).
    expect(socket.paused).toBe(true);

    socket.bufferedAmount = 0;
    await socket.until(() => socket.sent.length > producedWhileFull);
    // Each reply refills the buffer: one at a time while the client reads.
    while (socket.sent.length < 40) {
      socket.bufferedAmount = 0;
      await socket.until(
        () => socket.sent.length > 0 && (socket.bufferedAmount > 0 || socket.sent.length === 40),
      );
    }
    expect(socket.sent.map((t) => JSON.parse(t).id)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(socket.paused).toBe(false);
    conn.close();
  });

  it('closes a socket that stays over the high-water mark longer than the stall limit', async () => {
    const socket = new UnreadSocket();
    socket.bufferedAmount = 5000;
    const conn = connect(socket, { stalledSocketMs: 100 });
    conn.receive(hello(1));
    await socket.until(() => socket.terminated);
    expect(socket.sent).toEqual([]);
    conn.close();
  });

  it('closes a socket at once when its buffer passes the hard limit', async () => {
    const socket = new UnreadSocket();
    socket.bufferedAmount = 10_000;
    const conn = connect(socket, { highWaterBytes: 100_000, maxBufferedBytes: 10_100 });
    conn.receive(hello(1));
    await socket.until(() => socket.terminated);
    conn.close();
  });
});
