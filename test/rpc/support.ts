import WebSocket from 'ws';
import { issueToken } from '../../src/host/identity/principals.js';
import { issueLoginCode, signInWithCode } from '../../src/host/identity/sessions.js';
import type { HttpLimits } from '../../src/surfaces/http/limits.js';
import { type HostServer, startHostServer } from '../../src/surfaces/http/server.js';
import type { RpcLimits } from '../../src/surfaces/rpc/methods.js';
import { openTestHost, type TestHost } from '../support/host.js';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect reply JSON field by field.
export type Json = any;

/**
 * One JSON-RPC request POSTed to `/mcp` as an MCP client sends it (id 1 unless given); the HTTP
 * status and the message of the reply's SSE `data:` line (undefined when there is none).
 */
export async function postMcp(
  baseUrl: string,
  token: string,
  method: string,
  params: unknown,
  id = 1,
): Promise<{ status: number; message: Json }> {
  const res = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
  const data = /^data: (.*)$/m.exec(await res.text())?.[1];
  return { status: res.status, message: data === undefined ? undefined : JSON.parse(data) };
}

/** A test host with a real server listening on 127.0.0.1:0. */
export interface ServedHost extends TestHost {
  server: HostServer;
  /** A WebSocket client authenticated as `name`. */
  client(name?: string): Promise<RpcClient>;
  token(name?: string): Promise<string>;
  /** A signed-in browser session for a person, as a `Cookie` header value. */
  sessionCookie(name?: string): Promise<string>;
}

export async function openServedHost(
  options: { limits?: Partial<RpcLimits>; httpLimits?: Partial<HttpLimits>; webRoot?: string } = {},
): Promise<ServedHost> {
  const host = await openTestHost();
  const server = await startHostServer({
    ctx: host.ctx,
    port: 0,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.httpLimits ? { httpLimits: options.httpLimits } : {}),
    webRoot: options.webRoot ?? '/nonexistent-web-root',
  });
  const clients: RpcClient[] = [];
  const token = (name = 'owner') => issueToken(host.ctx, name);
  return {
    ...host,
    server,
    token,
    async sessionCookie(name = 'owner') {
      const session = await signInWithCode(host.ctx, (await issueLoginCode(host.ctx, name)).code);
      if (!session) throw new Error(`could not sign ${name} in`);
      return `${server.app.sessionCookieName}=${session.secret}`;
    },
    async client(name = 'owner') {
      const c = await RpcClient.connect(server.url, await token(name));
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.close();
      await server.close();
      await host.close();
    },
  };
}

export interface RpcReply {
  /** The raw text of the reply frame, as received. */
  raw: string;
  bytes: number;
  result?: Json;
  error?: { code: number; message: string; data: { code: string; field?: string } };
  id: unknown;
}

/** A small JSON-RPC client over `ws` that keeps raw frames, so tests can measure them. */
export class RpcClient {
  readonly notifications: { method: string; params: Json; raw: string }[] = [];
  readonly #pending = new Map<string, (reply: RpcReply) => void>();
  #next = 1;
  #waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const raw = data.toString();
      const msg = JSON.parse(raw);
      if (msg.method !== undefined && msg.id === undefined) {
        this.notifications.push({ method: msg.method, params: msg.params, raw });
        for (const w of this.#waiters.splice(0)) w();
        return;
      }
      const key = JSON.stringify(msg.id);
      const resolve = this.#pending.get(key);
      this.#pending.delete(key);
      resolve?.({
        raw,
        bytes: Buffer.byteLength(raw, 'utf8'),
        result: msg.result,
        error: msg.error,
        id: msg.id,
      });
    });
  }

  static connect(url: string, token: string, headers: Record<string, string> = {}): Promise<RpcClient> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/rpc`, {
      headers: { authorization: `Bearer ${token}`, ...headers },
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new RpcClient(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
  }

  /** Sends a request with the given id (default: a counter) and resolves with its reply. */
  call(method: string, params?: unknown, id: string | number = this.#next++): Promise<RpcReply> {
    const key = JSON.stringify(id);
    return new Promise((resolve) => {
      this.#pending.set(key, resolve);
      this.ws.send(
        JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }),
      );
    });
  }

  /** Sends raw text; resolves with the next reply to `id`. */
  sendRaw(text: string, id: unknown = null): Promise<RpcReply> {
    return new Promise((resolve) => {
      this.#pending.set(JSON.stringify(id), resolve);
      this.ws.send(text);
    });
  }

  /** Calls and throws on an error reply. */
  async ok(method: string, params?: unknown): Promise<Json> {
    const reply = await this.call(method, params);
    if (reply.error) throw new Error(`${method}: ${reply.error.message} (${reply.error.data?.code})`);
    return reply.result;
  }

  /** Resolves once a notification matching `pred` has arrived. */
  async waitFor(pred: (n: { method: string; params: Json }) => boolean, timeoutMs = 10_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.notifications.find(pred);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a notification');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.ws.close();
  }
}
