import { Agent, request } from 'node:http';
import WebSocket from 'ws';

/** A JSON-RPC client over one WebSocket to `/rpc`, one request at a time or many in flight. */
export class WsRpc {
  readonly #pending = new Map<number, (reply: { result?: unknown; error?: unknown }) => void>();
  #nextId = 1;

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const reply = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: unknown };
      if (typeof reply.id !== 'number') return;
      this.#pending.get(reply.id)?.(reply);
      this.#pending.delete(reply.id);
    });
  }

  static open(baseUrl: string, token: string): Promise<WsRpc> {
    const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/rpc`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new WsRpc(socket)));
      socket.once('error', reject);
    });
  }

  call(method: string, params: unknown): Promise<unknown> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, (reply) =>
        reply.error ? reject(new Error(JSON.stringify(reply.error))) : resolve(reply.result),
      );
      this.socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  close(): void {
    this.socket.close();
  }
}

/** POSTs over kept-alive HTTP/1.1 connections (like any HTTP client that reuses its sockets). */
export class HttpPoster {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 16 });
  readonly #url: URL;

  constructor(baseUrl: string) {
    this.#url = new URL(baseUrl);
  }

  post(
    path: string,
    headers: Record<string, string>,
    body: string,
  ): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          agent: this.#agent,
          host: this.#url.hostname,
          port: this.#url.port,
          path,
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** One JSON-RPC call to `/rpc`; throws on an error reply. */
  async rpc(token: string, method: string, params: unknown): Promise<unknown> {
    const { status, text } = await this.post(
      '/rpc',
      { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    );
    const reply = JSON.parse(text) as { result?: unknown; error?: unknown };
    if (status !== 200 || reply.error) throw new Error(`${status} ${text.slice(0, 200)}`);
    return reply.result;
  }

  /** One MCP `tools/call` to `/mcp`, as an MCP client sends it; the result's text. */
  async tool(token: string, name: string, args: Record<string, unknown>): Promise<string> {
    const { status, text } = await this.post(
      '/mcp',
      {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    );
    const data = /^data: (.*)$/m.exec(text)?.[1];
    if (status !== 200 || data === undefined) throw new Error(`${status} ${text.slice(0, 200)}`);
    const result = (JSON.parse(data) as { result: { content: { text: string }[]; isError?: boolean } })
      .result;
    if (result.isError) throw new Error(result.content[0]?.text);
    return result.content[0]?.text ?? '';
  }

  close(): void {
    this.#agent.destroy();
  }
}
