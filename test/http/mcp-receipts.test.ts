// Received means received over HTTP (DESIGN.md I9, I3): a `channel_read` answered on /mcp joins the
// turn's coverage only once the whole HTTP response was written. A client that drops the
// connection, or a host killed before the reply is complete, leaves the messages pending.
// On both backends; the killed host is a real `sluice serve` process (built CLI).
import { connect, type Socket } from 'node:net';
import sharp from 'sharp';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/context.js';
import { putMedia } from '../../src/host/media.js';
import { sendMessage } from '../../src/host/messages.js';
import { issueToken, type Principal } from '../../src/host/principals.js';
import { beginTurn, endTurn } from '../../src/host/turns/index.js';
import { type HostServer, startHostServer } from '../../src/surfaces/http/server.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { type ServeProcess, startServe } from '../conformance/hosts.js';
import { pendingIds, receiptCommitted } from '../mcp/support.js';

const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
};

const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

/** The raw HTTP/1.1 request text for a POST to /mcp. */
function rawPost(url: string, token: string, body: unknown): string {
  const { host } = new URL(url);
  const text = JSON.stringify(body);
  const headers = {
    host,
    authorization: `Bearer ${token}`,
    ...MCP_HEADERS,
    'content-length': String(Buffer.byteLength(text)),
  };
  return `POST /mcp HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n${text}`;
}

function openSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * Sends a batch and reads the SSE reply only until it holds `needle`; then stops reading (the
 * socket is paused, so the rest of the reply backs up in the kernel and the response cannot finish).
 * Returns the socket and whether the reply had already ended by then.
 */
async function readUntil(
  url: string,
  token: string,
  body: unknown,
  needle: string,
): Promise<{ socket: Socket; ended: boolean }> {
  const socket = await openSocket(url);
  let seen = '';
  return new Promise((resolve, reject) => {
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      if (seen.includes(needle)) {
        socket.pause();
        socket.removeAllListeners('data');
        // A chunked reply ends with a zero-length chunk.
        resolve({ socket, ended: seen.includes('\r\n0\r\n\r\n') });
      }
    });
    socket.once('close', () =>
      reject(new Error(`connection closed before ${needle}: ${seen.slice(0, 300)}`)),
    );
    socket.write(rawPost(url, token, body));
  });
}

/** One `tools/call` through fetch, the reply read whole; the text of its one content block. */
async function callTool(url: string, token: string, name: string, args: Record<string, unknown> = {}) {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
    body: JSON.stringify(call(1, name, args)),
  });
  expect(res.status).toBe(200);
  const sse = await res.text();
  const data = /^data: (.*)$/m.exec(sse)?.[1];
  if (data === undefined) throw new Error(`no SSE data in ${sse.slice(0, 300)}`);
  return JSON.parse(
    (JSON.parse(data) as { result: { content: { text: string }[] } }).result.content[0]!.text,
  );
}

/** A noise PNG just under the 5 MB image limit: `channel_read_image` returns it as it is (~6.5 MB base64). */
async function noisePng(): Promise<Buffer> {
  for (let side = 1290; ; side -= 10) {
    const png = await sharp({
      create: {
        width: side,
        height: side,
        channels: 3,
        background: '#808080',
        noise: { type: 'gaussian', mean: 128, sigma: 60 },
      },
    })
      .png({ compressionLevel: 0 })
      .toBuffer();
    if (png.length < 5 * 1024 * 1024) return png;
  }
}

describe.each(backendsUnderTest())(
  'a channel_read over /mcp counts only once its reply was written (%s)',
  (backend) => {
    let h: ConformanceHost;
    let bot: Principal;
    let token: string;
    let png: Buffer;
    const cleanups: (() => Promise<void>)[] = [];

    beforeAll(async () => {
      png = await noisePng();
    });

    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
    });

    async function open(): Promise<void> {
      h = await openConformanceHost(backend, 'mcp_receipts');
      cleanups.push(() => h.close());
      bot = await h.agent('bot', 'turn');
      token = await issueToken(h.ctx, 'bot');
    }

    async function inProcess(): Promise<HostServer> {
      const server = await startHostServer({ ctx: h.ctx, port: 0, webRoot: '/nonexistent-web-root' });
      cleanups.push(() => server.close());
      return server;
    }

    async function subprocess(): Promise<ServeProcess> {
      const serve = await startServe({ home: h.home, db: h.db });
      cleanups.push(() => serve.kill());
      return serve;
    }

    const send = async (ctx: HostContext, body: string) =>
      (await sendMessage(ctx, h.owner, { to: 'bot', body })).message_id;

    it('a page whose reply was written whole is handled by the successful turn', async () => {
      await open();
      const server = await inProcess();
      const ids = [await send(h.ctx, 'one'), await send(h.ctx, 'two')];
      const turn = await beginTurn(h.ctx, bot);
      const page = await callTool(server.url, token, 'channel_read');
      expect(page.messages.map((m: { message_id: string }) => m.message_id)).toEqual(ids);
      const settled = await endTurn(h.ctx, bot, turn.id, { ok: true });
      expect(settled.handled).toEqual(ids);
      expect(await pendingIds(h.ctx, bot.id)).toEqual([]);
    });

    it('a client that drops the connection right after its request consumes nothing', async () => {
      await open();
      const server = await inProcess();
      const ids = [await send(h.ctx, 'dropped one'), await send(h.ctx, 'dropped two')];
      const turn = await beginTurn(h.ctx, bot);
      // The host sees the request; its response closes (written out or not) with the client gone.
      const closed = new Promise<void>((resolve) => {
        server.app.server.prependOnceListener('request', (_req, res) => res.once('close', () => resolve()));
      });
      const socket = await openSocket(server.url);
      socket.on('error', () => {});
      socket.end(rawPost(server.url, token, call(1, 'channel_read')));
      socket.destroy();
      await closed;
      // A full round trip on a live connection: the dropped request was dealt with before it.
      expect((await callTool(server.url, token, 'inbox_status')).pending).toBe(2);
      const settled = await endTurn(h.ctx, bot, turn.id, { ok: true });
      expect(settled.handled).toEqual([]);
      expect(await pendingIds(h.ctx, bot.id)).toEqual(ids);
    });

    it('a client that drops the connection before the reply is complete consumes nothing', async () => {
      await open();
      const server = await inProcess();
      const id = await send(h.ctx, 'cut off');
      const image = (await putMedia(h.ctx, h.owner, png, 'noise.png')).attachment_id;
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'noise', attachmentIds: [image] });
      const turn = await beginTurn(h.ctx, bot);
      const images = Array.from({ length: 5 }, (_, i) =>
        call(i + 2, 'channel_read_image', { attachment_id: image }),
      );
      // The read's own result arrives; the images behind it (~33 MB) never finish.
      const { socket, ended } = await readUntil(
        server.url,
        token,
        [call(1, 'channel_read', { message_id: id }), ...images],
        `${id}\\"`,
      );
      expect(ended).toBe(false);
      socket.destroy();
      const settled = await endTurn(h.ctx, bot, turn.id, { ok: true });
      expect(settled.handled).toEqual([]);
      expect((await pendingIds(h.ctx, bot.id)).slice(0, 1)).toEqual([id]);
    });

    it('a host killed before the reply is complete consumes nothing; a reply written whole by the next host does', {
      timeout: 60_000,
    }, async () => {
      await open();
      const id = await send(h.ctx, 'killed mid-reply');
      const image = (await putMedia(h.ctx, h.owner, png, 'noise.png')).attachment_id;
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'noise', attachmentIds: [image] });
      const turn = await beginTurn(h.ctx, bot);
      const victim = await subprocess();
      const images = Array.from({ length: 5 }, (_, i) =>
        call(i + 2, 'channel_read_image', { attachment_id: image }),
      );
      const { socket, ended } = await readUntil(
        victim.url,
        token,
        [call(1, 'channel_read', { message_id: id }), ...images],
        `${id}\\"`,
      );
      expect(ended).toBe(false);
      await victim.kill();
      socket.destroy();
      const settled = await endTurn(h.ctx, bot, turn.id, { ok: true });
      expect(settled.handled).toEqual([]);
      expect((await pendingIds(h.ctx, bot.id)).slice(0, 1)).toEqual([id]);

      // The same read through a host that lives: its reply is written, confirmed there, then settled.
      const next = await beginTurn(h.ctx, bot);
      const survivor = await subprocess();
      const page = await callTool(survivor.url, token, 'channel_read', { message_id: id });
      expect(page.messages[0].message_id).toBe(id);
      await receiptCommitted(h.ctx, next.id, 1);
      expect((await endTurn(h.ctx, bot, next.id, { ok: true })).handled).toEqual([id]);
    });
  },
);
