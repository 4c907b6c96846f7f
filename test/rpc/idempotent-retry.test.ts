import { connect } from 'node:net';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { issueToken } from '../../src/host/identity/principals.js';
import type { Store } from '../../src/store/store.js';
import { type HostServer, startHostServer } from '../../src/surfaces/http/server.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';

type Json = Record<string, unknown>;

function request(params: Json, id = 1): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'message.send', params });
}

/** POSTs a request and never reads the reply; `drop()` kills the connection. */
function postAndNeverRead(url: string, token: string, text: string): Promise<{ drop(): void }> {
  const { hostname, port } = new URL(url);
  const body = Buffer.from(text, 'utf8');
  const head =
    `POST /rpc HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.pause();
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]), () =>
        resolve({ drop: () => socket.destroy() }),
      );
    });
    socket.on('error', reject);
  });
}

/**
 * A store whose next send transaction stops before it commits until `release()`: the test kills
 * the client connection while the host is mid-send, so the message commits and the reply is lost.
 */
function gatedStore(store: Store) {
  let reached: () => void = () => undefined;
  let release: () => void = () => undefined;
  const midSend = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let armed = true;
  // Sends commit through sendTransaction (group commit); gate both kinds of write transaction.
  const gateResult = async <T>(result: T): Promise<T> => {
    if (armed && result !== null && typeof result === 'object' && 'message_id' in result) {
      armed = false;
      reached();
      await gate;
    }
    return result;
  };
  const gated: Store = {
    ...store,
    transaction: (fn) => store.transaction(async (trx) => gateResult(await fn(trx))),
    sendTransaction: (fn, options) => store.sendTransaction(async (db) => gateResult(await fn(db)), options),
  };
  return { store: gated, midSend, release };
}

/**
 * Sends one frame over a WebSocket and returns `drop()`, which kills the connection. The test drops
 * it once the host is mid-send, so the message commits and its reply has nowhere to go.
 */
function sendFrame(url: string, token: string, text: string): Promise<{ drop(): void }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/rpc`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () =>
      ws.send(text, (err) => {
        if (err) reject(err);
        else resolve({ drop: () => ws.terminate() });
      }),
    );
  });
}

async function post(url: string, token: string, text: string): Promise<Json> {
  const res = await fetch(`${url}/rpc`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: text,
  });
  return (await res.json()) as Json;
}

describe.each(backendsUnderTest())('a send retried after a dropped connection, on %s', (backend) => {
  let h: ConformanceHost;
  let server: HostServer;
  let token: string;
  let gate: ReturnType<typeof gatedStore>;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'retry');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
    await h.agent('bot');
    gate = gatedStore(h.ctx.store);
    const ctx = { ...h.ctx, store: gate.store };
    server = await startHostServer({ ctx, port: 0, webRoot: '/nonexistent-web-root' });
    token = await issueToken(h.ctx, 'owner');
  });
  afterEach(async () => {
    gate?.release();
    await server?.close();
    await h?.close();
  });

  const storedIds = async (body: string) =>
    (await h.ctx.store.db.selectFrom('messages').select('id').where('body', '=', body).execute()).map(
      (r) => r.id,
    );
  /** The dropped request's message, once the host has committed it (it never answered anyone). */
  const committed = (body: string) =>
    vi.waitFor(
      async () => {
        const ids = await storedIds(body);
        if (ids.length === 0) throw new Error('not committed yet');
        return ids;
      },
      { timeout: 10_000, interval: 20 },
    );

  it('stores the message twice without a key (the hazard)', async () => {
    const client = await postAndNeverRead(server.url, token, request({ to: 'bot', body: 'twice' }));
    await gate.midSend;
    client.drop();
    gate.release();
    await committed('twice');
    const retry = await post(server.url, token, request({ to: 'bot', body: 'twice' }));
    expect(retry.result).toBeDefined();
    expect(await storedIds('twice')).toHaveLength(2);
  });

  it('stores it once over POST: the retry with the same key gets the first result', async () => {
    const params = { to: 'bot', body: 'once over POST', idempotency_key: 'post-1' };
    const client = await postAndNeverRead(server.url, token, request(params));
    await gate.midSend;
    client.drop();
    gate.release();
    const [first] = await committed('once over POST');
    const retry = await post(server.url, token, request(params, 2));
    expect(retry.result).toMatchObject({ message_id: first });
    expect(await storedIds('once over POST')).toEqual([first]);
  });

  it('stores it once over WebSocket: the retry with the same key gets the first result', async () => {
    const params = { to: 'bot', body: 'once over WebSocket', idempotency_key: 'ws-1' };
    const client = await sendFrame(server.url, token, request(params));
    await gate.midSend;
    client.drop();
    gate.release();
    const [first] = await committed('once over WebSocket');
    const retry = await post(server.url, token, request(params, 2));
    expect(retry.result).toMatchObject({ message_id: first });
    expect(await storedIds('once over WebSocket')).toEqual([first]);
  });

  it('refuses the same key with another body as conflict, and stores nothing', async () => {
    gate.release(); // nothing is dropped here
    const first = await post(server.url, token, request({ to: 'bot', body: 'v1', idempotency_key: 'k' }));
    const reused = await post(server.url, token, request({ to: 'bot', body: 'v2', idempotency_key: 'k' }));
    expect(reused.error).toMatchObject({
      code: -32009,
      data: { code: 'conflict', field: 'idempotency_key' },
    });
    expect(await storedIds('v2')).toEqual([]);
    expect(await storedIds('v1')).toEqual([(first.result as Json).message_id]);
  });
});
