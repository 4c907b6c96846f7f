// Fair shares of one host among principals who do not trust each other (issue 25, item 1).
// Found in review: any token (an agent's, a person's device) opened ~255 idle WebSockets and filled
// the host's 256-connection cap, so the owner's new connections were reset until it let go; idle
// sockets were never closed; and one sender could send without limit.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { issueToken } from '../../src/host/identity/principals.js';
import { openServedHost, postMcp, RpcClient, type ServedHost } from '../rpc/support.js';
import { headersOnly, openRaw } from './support/raw-socket.js';

let h: ServedHost | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Why a WebSocket ended: its close code and reason, or the HTTP status of a refused upgrade. */
interface Ended {
  code: number;
  reason: string;
}

/** Opens a WebSocket; resolves once it is open or has ended (refused, reset or closed at once). */
function openSocket(url: string, token: string): Promise<{ ws: WebSocket; ended: Promise<Ended> }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/rpc`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const ended = new Promise<Ended>((resolve) => {
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    ws.once('unexpected-response', (_req, res) => resolve({ code: res.statusCode ?? 0, reason: 'http' }));
  });
  ws.on('error', () => {});
  return new Promise((resolve) => {
    ws.once('open', () => resolve({ ws, ended }));
    void ended.then(() => resolve({ ws, ended }));
  });
}

/** Resolves with `what` or fails after `ms` (a bound on a wait, never a synchronisation). */
function within<T>(ms: number, what: Promise<T>, label: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label}: not within ${ms} ms`)), ms);
    void what.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

async function rpcPost(url: string, token: string, method: string, params: unknown) {
  const res = await fetch(`${url}/rpc`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as {
    result?: { message_id: string };
    error?: { code: number; message: string; data: { code: string; retryAfterMs?: number } };
  };
}

describe('GET and DELETE /mcp hold no connection', () => {
  // Found in review: GET /mcp opened the SDK's standalone SSE stream, whose keepalives kept it from
  // ever idling out, so one agent token held every connection of the host.
  for (const method of ['GET', 'DELETE']) {
    it(`answers ${method} /mcp with 405 (Allow: POST) and one line; the connection is not held`, async () => {
      // Keep-alive longer than the wait below: the connection must close because of the answer.
      h = await openServedHost({ httpLimits: { keepAliveTimeoutMs: 60_000 } });
      await h.agent('streamer');
      const agentToken = await issueToken(h.ctx, 'streamer');
      const raw = await openRaw(h.server.url);
      raw.write(
        headersOnly(h.server.url, method, '/mcp', {
          authorization: `Bearer ${agentToken}`,
          accept: 'text/event-stream',
        }),
      );
      const head = await within(5_000, raw.waitFor('\r\n\r\n'), 'the answer');
      expect(head).toMatch(/^HTTP\/1\.1 405 /);
      expect(head).toMatch(/\r\nallow: POST\r\n/i);
      expect(head).toMatch(/\r\ncontent-type: application\/json/i);
      expect(head).toMatch(/\r\nconnection: close\r\n/i);
      // The answer ends and the host closes the connection at once.
      const all = await within(5_000, raw.closed, 'the connection closing');
      const body = JSON.parse(all.slice(all.indexOf('\r\n\r\n') + 4)) as {
        error: { code: string; message: string };
      };
      expect(body.error.code).toBe('invalid_params');
      expect(body.error.message).toMatch(/^POST /);
      expect(body.error.message).not.toMatch(/\n/);
    });
  }
});

describe('WebSockets per principal', () => {
  it("one agent token flooding WebSockets up to the host's connection cap leaves the owner room", async () => {
    h = await openServedHost({ httpLimits: { maxConnections: 24, maxWebSocketsPerPrincipal: 6 } });
    await h.agent('flooder');
    const agentToken = await issueToken(h.ctx, 'flooder');
    const flood = await Promise.all(Array.from({ length: 24 }, () => openSocket(h!.server.url, agentToken)));
    try {
      const open = flood.filter((s) => s.ws.readyState === WebSocket.OPEN);
      const refused = await Promise.all(
        flood.filter((s) => s.ws.readyState !== WebSocket.OPEN).map((s) => s.ended),
      );
      // The cap holds: the rest were refused with the documented code and one line.
      expect(open.length).toBeLessThanOrEqual(6);
      expect(refused.length).toBeGreaterThanOrEqual(18);
      for (const r of refused) {
        expect(r.code).toBe(4429);
        expect(r.reason).toMatch(/at most 6 WebSockets per principal/);
      }
      // The owner still connects and is served.
      const owner = await within(5_000, RpcClient.connect(h.server.url, await h.token('owner')), 'owner');
      expect((await owner.call('host.hello')).result.protocol).toBe('sluice/1');
      owner.close();
      // Letting one go frees a place for the same principal.
      const first = open[0];
      if (!first) throw new Error('no socket of the flood was accepted');
      first.ws.close();
      await first.ended;
      const again = await openSocket(h.server.url, agentToken);
      expect(again.ws.readyState).toBe(WebSocket.OPEN);
      again.ws.close();
    } finally {
      for (const s of flood) s.ws.terminate();
    }
  });

  it('closes a WebSocket with no subscription after the idle time (4408); a subscribed one stays', async () => {
    h = await openServedHost({ httpLimits: { idleWebSocketMs: 400 } });
    const token = await h.token('owner');
    const idle = await openSocket(h.server.url, token);
    const subscribed = await RpcClient.connect(h.server.url, token);
    await subscribed.ok('subscribe', { channelList: true });
    const ended = await within(5_000, idle.ended, 'idle socket');
    expect(ended.code).toBe(4408);
    expect(ended.reason).toMatch(/idle/);
    // The subscribed socket outlived the idle one opened before it, and still answers.
    expect(subscribed.ws.readyState).toBe(WebSocket.OPEN);
    expect((await subscribed.call('host.hello')).result.protocol).toBe('sluice/1');
    subscribed.close();
  });
});

describe('message.send rate per principal', () => {
  it('answers rate_limited with a retry-after once the burst is spent (RPC over POST and WebSocket); nothing is stored', async () => {
    h = await openServedHost({ httpLimits: { sendBurst: 3, sendsPerMinute: 60 } });
    await h.agent('chatty');
    const token = await issueToken(h.ctx, 'chatty');
    for (let i = 0; i < 3; i++) {
      expect(
        (await rpcPost(h.server.url, token, 'message.send', { to: 'owner', body: `ok ${i}` })).result,
      ).toBeDefined();
    }
    const limited = await rpcPost(h.server.url, token, 'message.send', { to: 'owner', body: 'too many' });
    expect(limited.error?.code).toBe(-32029);
    expect(limited.error?.data.code).toBe('rate_limited');
    expect(limited.error?.data.retryAfterMs).toBeGreaterThan(0);
    expect(limited.error?.data.retryAfterMs).toBeLessThanOrEqual(1_000);
    expect(limited.error?.message).toMatch(/retry in/);
    // The same bucket over the WebSocket.
    const ws = await RpcClient.connect(h.server.url, token);
    const overWs = await ws.call('message.send', { to: 'owner', body: 'too many' });
    expect(overWs.error?.data.code).toBe('rate_limited');
    ws.close();
    const rows = await h.ctx.store.db
      .selectFrom('messages')
      .select('id')
      .where('body', '=', 'too many')
      .execute();
    expect(rows).toHaveLength(0);
    // Other requests are not counted.
    const hello = await rpcPost(h.server.url, token, 'host.hello', {});
    expect(hello.error).toBeUndefined();
  });

  it('exempts the owner by default, and counts it when rateLimitOwner=1', async () => {
    h = await openServedHost({ httpLimits: { sendBurst: 2, sendsPerMinute: 1 } });
    await h.agent('peer');
    const owner = await h.token('owner');
    for (let i = 0; i < 6; i++) {
      expect(
        (await rpcPost(h.server.url, owner, 'message.send', { to: 'peer', body: `owner ${i}` })).error,
      ).toBeUndefined();
    }
    await h.close();
    h = await openServedHost({ httpLimits: { sendBurst: 2, sendsPerMinute: 1, rateLimitOwner: 1 } });
    await h.agent('peer');
    const owner2 = await h.token('owner');
    const codes: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++)
      codes.push(
        (await rpcPost(h.server.url, owner2, 'message.send', { to: 'peer', body: `owner ${i}` })).error?.data
          .code,
      );
    expect(codes).toEqual([undefined, undefined, 'rate_limited']);
  });

  it('limits message_send and message_reply over MCP with the same bucket', async () => {
    h = await openServedHost({ httpLimits: { sendBurst: 2, sendsPerMinute: 1 } });
    await h.agent('mcp-agent');
    const token = await issueToken(h.ctx, 'mcp-agent');
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { message } = await postMcp(h.server.url, token, 'tools/call', {
        name: 'message_send',
        arguments: { to: 'owner', body: `mcp ${i}` },
      });
      texts.push(message?.result?.content[0]?.text ?? '');
    }
    expect(texts[0]).toMatch(/message_id/);
    expect(texts[1]).toMatch(/message_id/);
    expect(JSON.parse(texts[2] ?? '').error.code).toBe('rate_limited');
    expect(JSON.parse(texts[2] ?? '').error.message).toMatch(/retry in/);
  });
});
