import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InjectOptions } from 'fastify';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueLoginCode } from '../../src/host/identity/sessions.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { startHostServer } from '../../src/surfaces/http/server.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';

describe('HTTP routes of sluice serve', () => {
  let h: ServedHost;
  let webRoot: string;
  let ownerToken: string;

  beforeAll(async () => {
    webRoot = mkdtempSync(join(tmpdir(), 'sluice-web-'));
    mkdirSync(join(webRoot, 'assets'));
    writeFileSync(join(webRoot, 'index.html'), '<!doctype html><title>page</title>');
    writeFileSync(join(webRoot, 'assets', 'app.js'), 'console.log(1)');
    h = await openServedHost({ webRoot });
    await h.agent('helper');
    ownerToken = await h.token();
  });
  afterAll(async () => {
    await h.close();
    rmSync(webRoot, { recursive: true, force: true });
  });

  const inject = (opts: InjectOptions) => h.server.app.inject(opts);
  const bearer = (token = ownerToken) => ({ authorization: `Bearer ${token}` });

  it('answers /healthz', async () => {
    const res = await inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', logLinesDropped: 0, lastUseNotRecorded: 0 });
  });

  it('signs a browser in with a login link (GET shows the button, POST sets the session cookie)', async () => {
    const { code } = await issueLoginCode(h.ctx, 'owner');
    expect((await inject({ method: 'GET', url: `/login?code=${code}` })).statusCode).toBe(200);
    const res = await inject({
      method: 'POST',
      url: '/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: `code=${code}`,
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/');
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^sluice_session_\d+=/);
    const rpc = await inject({
      method: 'POST',
      url: '/rpc',
      headers: {
        cookie: cookie.split(';')[0] as string,
        'sec-fetch-site': 'same-origin',
        'content-type': 'application/json',
      },
      payload: '{"jsonrpc":"2.0","id":"c","method":"host.hello"}',
    });
    expect(rpc.json()).toMatchObject({ id: 'c', result: { principal: { name: 'owner' } } });
  });

  it('refuses a bad login link, and an access token in its place, without setting a cookie', async () => {
    for (const url of ['/login?code=sll_wrong', `/login?code=${ownerToken}`, `/login?token=${ownerToken}`]) {
      const res = await inject({ method: 'GET', url });
      expect(res.statusCode).toBe(401);
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  it('POST /rpc: malformed JSON is -32700, a notification is 204, and bodies over 4 MiB are 413', async () => {
    const bad = await inject({ method: 'POST', url: '/rpc', headers: bearer(), payload: '{oops' });
    expect(bad.statusCode).toBe(200);
    expect(bad.json()).toMatchObject({ id: null, error: { code: -32700 } });
    const note = await inject({
      method: 'POST',
      url: '/rpc',
      headers: { ...bearer(), 'content-type': 'text/plain' },
      payload: '{"jsonrpc":"2.0","method":"host.hello"}',
    });
    expect(note.statusCode).toBe(204);
    const huge = await inject({
      method: 'POST',
      url: '/rpc',
      headers: bearer(),
      payload: 'x'.repeat(4 * 1024 * 1024 + 1),
    });
    expect(huge.statusCode).toBe(413);
  });

  it('serves the built page: files, index.html for page routes, never a file outside the root', async () => {
    expect((await inject({ method: 'GET', url: '/' })).body).toContain('<title>page</title>');
    const js = await inject({ method: 'GET', url: '/assets/app.js' });
    expect(js.headers['content-type']).toContain('text/javascript');
    expect(js.headers['cache-control']).toContain('immutable');
    expect((await inject({ method: 'GET', url: '/queues/helper' })).body).toContain('<title>page</title>');
    expect((await inject({ method: 'GET', url: '/assets/missing.js' })).statusCode).toBe(404);
    const traversal = await inject({ method: 'GET', url: '/..%2f..%2f..%2fetc%2fpasswd' });
    expect(traversal.body).not.toContain('root:');
    expect(traversal.body).toContain('<title>page</title>');
  });

  it('says how to build the page when web/dist is missing', async () => {
    const bare = await openServedHost();
    try {
      const res = await bare.server.app.inject({ method: 'GET', url: '/' });
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('npm run build');
    } finally {
      await bare.close();
    }
  });

  it('stores an upload with the MIME sniffed from its bytes and serves it to members only', async () => {
    const png = await sharp({ create: { width: 2, height: 2, channels: 3, background: '#f00' } })
      .png()
      .toBuffer();
    const up = await inject({
      method: 'POST',
      url: '/media',
      headers: { ...bearer(), 'content-type': 'text/plain', 'x-filename': encodeURIComponent('café.txt') },
      payload: png,
    });
    expect(up.statusCode).toBe(201);
    const ref = up.json();
    expect(ref).toMatchObject({ name: 'café.txt', mime: 'image/png', size: png.length });

    const own = await inject({ method: 'GET', url: `/media/${ref.attachment_id}`, headers: bearer() });
    expect(own.statusCode).toBe(200);
    expect(own.headers['content-type']).toBe('image/png');
    expect(own.headers['x-content-type-options']).toBe('nosniff');
    expect(Buffer.compare(own.rawPayload, png)).toBe(0);

    await h.person('outsider');
    const outsider = bearer(await h.token('outsider'));
    expect(
      (await inject({ method: 'GET', url: `/media/${ref.attachment_id}`, headers: outsider })).statusCode,
    ).toBe(404);
    // Once a message in a channel references it, that channel's members may read it.
    await sendMessage(h.ctx, h.owner, { to: 'helper', body: '', attachmentIds: [ref.attachment_id] });
    const helper = bearer(await h.token('helper'));
    expect(
      (await inject({ method: 'GET', url: `/media/${ref.attachment_id}`, headers: helper })).statusCode,
    ).toBe(200);
    expect(
      (await inject({ method: 'GET', url: `/media/${ref.attachment_id}`, headers: outsider })).statusCode,
    ).toBe(404);
  });

  it('refuses uploads without a token and empty uploads', async () => {
    expect((await inject({ method: 'POST', url: '/media', payload: 'abc' })).statusCode).toBe(401);
    const empty = await inject({ method: 'POST', url: '/media', headers: bearer(), payload: '' });
    expect(empty.statusCode).toBe(400);
  });

  it('refuses an upload over the cap with a clear 413, whether declared or streamed', async () => {
    const capped = await startHostServer({
      ctx: { ...h.ctx, limits: { ...h.ctx.limits, maxUploadBytes: 1024 } },
      port: 0,
      webRoot,
      mcp: false,
    });
    try {
      const declared = await capped.app.inject({
        method: 'POST',
        url: '/media',
        headers: bearer(),
        payload: Buffer.alloc(2048, 1),
      });
      expect(declared.statusCode).toBe(413);
      expect(declared.json()).toMatchObject({ error: { code: 'too_large' } });
      // Streamed without a length: refused while reading.
      const res = await fetch(`${capped.url}/media`, {
        method: 'POST',
        headers: bearer(),
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < 8; i++) controller.enqueue(new Uint8Array(512));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
    } finally {
      await capped.close();
    }
  });

  it('mounts MCP over Streamable HTTP for agent tokens only', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
    };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const asAgent = await fetch(`${h.server.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, ...bearer(await h.token('helper')) },
      body: JSON.stringify(init),
    });
    expect(asAgent.status).toBe(200);
    expect(await asAgent.text()).toContain('"name":"sluice"');
    const asPerson = await fetch(`${h.server.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, ...bearer() },
      body: JSON.stringify(init),
    });
    expect(asPerson.status).toBe(403);
    const anonymous = await fetch(`${h.server.url}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify(init),
    });
    expect(anonymous.status).toBe(401);
  });
});
