import { request } from 'node:http';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { issueAccessToken } from '../../src/host/identity/principals.js';
import { issueLoginCode, revokeCredential } from '../../src/host/identity/sessions.js';
import { PAGE_CSP } from '../../src/surfaces/http/guard.js';
import { startHostServer } from '../../src/surfaces/http/server.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';

const HELLO = '{"jsonrpc":"2.0","id":1,"method":"host.hello"}';
const MCP_INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
/** What a browser adds to the page's own fetches (with `Referrer-Policy: no-referrer`). */
const FROM_PAGE = { 'sec-fetch-site': 'same-origin', origin: 'null' };

describe('browser sessions and access tokens over HTTP', () => {
  let h: ServedHost;
  let origin: string;
  beforeAll(async () => {
    h = await openServedHost();
    await h.agent('helper');
    origin = h.server.url;
  });
  afterAll(async () => h.close());

  const inject = (opts: InjectOptions) => h.server.app.inject(opts);
  const code = async (name = 'owner') => (await issueLoginCode(h.ctx, name)).code;
  const postLogin = (c: string, headers: Record<string, string> = FROM_PAGE) =>
    inject({
      method: 'POST',
      url: '/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: new URLSearchParams({ code: c }).toString(),
    });
  const rpc = (headers: Record<string, string>) =>
    inject({
      method: 'POST',
      url: '/rpc',
      headers: { 'content-type': 'application/json', ...headers },
      payload: HELLO,
    });

  it('GET /login shows who the link signs in and a button that POSTs; it spends nothing', async () => {
    const c = await code();
    for (let i = 0; i < 2; i++) {
      const page = await inject({ method: 'GET', url: `/login?code=${c}` });
      expect(page.statusCode).toBe(200);
      expect(page.headers['set-cookie']).toBeUndefined();
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.body).toContain('<form method="post" action="/login">');
      expect(page.body).toContain('Sign in as owner');
      expect(page.body).not.toContain('<script');
    }
    expect((await postLogin(c)).statusCode).toBe(303);
  });

  it('POST /login signs in once, with an http-only SameSite=Strict cookie named for the port', async () => {
    const c = await code();
    const res = await postLogin(c);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/');
    const cookie = String(res.headers['set-cookie']);
    const port = new URL(origin).port;
    expect(cookie).toMatch(new RegExp(`^sluice_session_${port}=sls_`));
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/');
    expect(cookie).not.toContain(c);
    const again = await postLogin(c);
    expect(again.statusCode).toBe(401);
    expect(again.headers['set-cookie']).toBeUndefined();
    expect((await inject({ method: 'GET', url: `/login?code=${c}` })).statusCode).toBe(401);
    const hello = await rpc({ cookie: cookie.split(';')[0] as string, ...FROM_PAGE });
    expect(hello.json()).toMatchObject({ result: { principal: { name: 'owner' } } });
  });

  it.each([
    ['an Origin of another site', { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' }],
    ['Origin null from another site', { origin: 'null', 'sec-fetch-site': 'cross-site' }],
    ['another port of the same machine', { origin: 'http://127.0.0.1:1', 'sec-fetch-site': 'same-site' }],
    ['Origin null with no Sec-Fetch-Site', { origin: 'null' }],
  ])('a cross-site form cannot sign the browser in (login CSRF): %s', async (_label, headers) => {
    const c = await code();
    const res = await postLogin(c, headers);
    expect(res.statusCode).toBe(403);
    expect(res.headers['set-cookie']).toBeUndefined();
    // The code was not spent: its owner can still use it.
    expect((await inject({ method: 'GET', url: `/login?code=${c}` })).statusCode).toBe(200);
  });

  it('the session cookie is not a bearer token on /rpc, /mcp or /media, and counts only from the page', async () => {
    const cookie = await h.sessionCookie();
    const secret = cookie.split('=')[1] as string;
    const asBearer = { authorization: `Bearer ${secret}` };
    expect((await rpc(asBearer)).statusCode).toBe(401);
    const mcp = await inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        ...asBearer,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      payload: MCP_INIT,
    });
    expect(mcp.statusCode).toBe(401);
    expect((await inject({ method: 'GET', url: '/media/m_x', headers: asBearer })).statusCode).toBe(401);
    // The cookie from a script outside the browser (no Sec-Fetch-Site, no Origin) is refused.
    expect((await rpc({ cookie })).statusCode).toBe(401);
    // MCP never takes the cookie, even from the page.
    const mcpCookie = await inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        cookie,
        ...FROM_PAGE,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      payload: MCP_INIT,
    });
    expect(mcpCookie.statusCode).toBe(401);
    expect((await rpc({ cookie, ...FROM_PAGE })).statusCode).toBe(200);
    expect(
      (
        await inject({
          method: 'GET',
          url: '/media/m_x',
          headers: { cookie, 'sec-fetch-site': 'same-origin' },
        })
      ).statusCode,
    ).toBe(404);
  });

  it('POST /logout ends the session on the host and clears the cookie', async () => {
    const cookie = await h.sessionCookie();
    const out = await inject({ method: 'POST', url: '/logout', headers: { cookie, ...FROM_PAGE } });
    expect(out.statusCode).toBe(200);
    expect(out.json()).toEqual({ ended: true });
    expect(String(out.headers['set-cookie'])).toMatch(/^sluice_session_\d+=; .*Max-Age=0/);
    expect((await rpc({ cookie, ...FROM_PAGE })).statusCode).toBe(401);
    // A cross-site page cannot log anyone out either.
    const other = await h.sessionCookie();
    const forced = await inject({
      method: 'POST',
      url: '/logout',
      headers: { cookie: other, origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(forced.statusCode).toBe(403);
    expect((await rpc({ cookie: other, ...FROM_PAGE })).statusCode).toBe(200);
  });

  it('an expired or revoked access token is refused on /rpc, /mcp and /media', async () => {
    const revoked = await issueAccessToken(h.ctx, 'helper');
    await revokeCredential(h.ctx, revoked.id);
    const expired = await issueAccessToken(
      { ...h.ctx, now: () => new Date(Date.now() - 2 * 3600_000) },
      'helper',
      {
        expiresInMs: 3600_000,
      },
    );
    for (const token of [revoked.token, expired.token]) {
      const bearer = { authorization: `Bearer ${token}` };
      expect((await rpc(bearer)).statusCode).toBe(401);
      expect(
        (
          await inject({
            method: 'POST',
            url: '/mcp',
            headers: {
              ...bearer,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
            },
            payload: MCP_INIT,
          })
        ).statusCode,
      ).toBe(401);
      expect((await inject({ method: 'GET', url: '/media/m_x', headers: bearer })).statusCode).toBe(401);
    }
  });
});

describe('browser hardening of every response', () => {
  let h: ServedHost;
  beforeAll(async () => {
    h = await openServedHost();
  });
  afterAll(async () => h.close());

  it.each([
    ['the page', { method: 'GET', url: '/' }],
    ['a login page', { method: 'GET', url: '/login?code=nope' }],
    ['an RPC refusal', { method: 'POST', url: '/rpc', payload: HELLO }],
    ['an unknown route', { method: 'GET', url: '/nope.js' }],
    ['a misdirected request', { method: 'GET', url: '/healthz', headers: { host: 'evil.example' } }],
  ] as const)('%s carries CSP, frame, referrer and sniffing protection', async (_label, opts) => {
    const res = await h.server.app.inject(opts as InjectOptions);
    expect(res.headers['content-security-policy']).toBe(PAGE_CSP);
    expect(PAGE_CSP).toContain("default-src 'self'");
    expect(PAGE_CSP).toContain("frame-ancestors 'none'");
    expect(PAGE_CSP).not.toContain('unsafe-inline');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it.each(['127.0.0.1', 'localhost', '[::1]'])('answers Host %s with its port', async (name) => {
    const port = new URL(h.server.url).port;
    const res = await h.server.app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { host: `${name}:${port}` },
    });
    expect(res.statusCode).toBe(200);
  });

  it.each(['evil.example', 'evil.example:7777', '127.0.0.1.evil.example', 'localhost.', '[::1', 'a:b'])(
    'answers Host %j with 421 (DNS rebinding)',
    async (host) => {
      const res = await h.server.app.inject({ method: 'GET', url: '/healthz', headers: { host } });
      expect(res.statusCode).toBe(host === 'localhost.' ? 200 : 421);
    },
  );

  it('answers the names given with --allowed-host, and still refuses others', async () => {
    const server = await startHostServer({
      ctx: h.ctx,
      port: 0,
      webRoot: '/nonexistent-web-root',
      allowedHosts: ['sluice.example.com'],
    });
    try {
      const ok = await server.app.inject({
        method: 'GET',
        url: '/healthz',
        headers: { host: 'sluice.example.com' },
      });
      expect(ok.statusCode).toBe(200);
      const no = await server.app.inject({
        method: 'GET',
        url: '/healthz',
        headers: { host: 'other.example.com' },
      });
      expect(no.statusCode).toBe(421);
    } finally {
      await server.close();
    }
  });
});

describe('Origin checks on a real port', () => {
  let h: ServedHost;
  beforeAll(async () => {
    h = await openServedHost();
  });
  afterAll(async () => h.close());

  function upgradeStatus(headers: Record<string, string>): Promise<number> {
    const ws = new WebSocket(`${h.server.url.replace('http', 'ws')}/rpc`, { headers });
    return new Promise((resolve) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => {
        ws.close();
        resolve(101);
      });
    });
  }

  it('a WebSocket from another origin is refused even with a valid token (cross-site WebSocket hijacking)', async () => {
    const token = await h.token();
    const port = Number(new URL(h.server.url).port);
    for (const origin of [
      'http://evil.example',
      `http://127.0.0.1:${port + 1}`,
      `http://localhost:${port + 1}`,
      'null',
    ]) {
      expect(await upgradeStatus({ authorization: `Bearer ${token}`, origin })).toBe(403);
    }
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]) {
      expect(await upgradeStatus({ authorization: `Bearer ${token}`, origin })).toBe(101);
    }
  });

  it('the cookie reaches the host only under its own port-scoped name, and a Host naming a rebinding domain gets 421', async () => {
    const cookie = await h.sessionCookie();
    expect(cookie).toMatch(new RegExp(`^sluice_session_${new URL(h.server.url).port}=`));
    // fetch() may not set Host; a raw request does, as a browser on a rebinding domain would.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${h.server.url}/rpc`, {
        method: 'POST',
        headers: {
          cookie,
          'sec-fetch-site': 'same-origin',
          host: `rebind.evil.example:${new URL(h.server.url).port}`,
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(HELLO);
    });
    expect(status).toBe(421);
  });
});
