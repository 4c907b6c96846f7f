import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HostServer, startHostServer } from '../../src/surfaces/http/server.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { headersOnly, openRaw } from './support/raw-socket.js';

const FOUR_MIB = 4 * 1024 * 1024;

describe('limits before work (sluice serve on a real port)', () => {
  let h: TestHost;
  let server: HostServer;
  let token: string;
  let agentToken: string;

  beforeAll(async () => {
    h = await openTestHost();
    const { addPrincipal, issueToken } = await import('../../src/host/identity/principals.js');
    token = await issueToken(h.ctx, 'owner');
    await addPrincipal(h.ctx, { name: 'bot', kind: 'agent' });
    agentToken = await issueToken(h.ctx, 'bot');
    server = await startHostServer({
      ctx: h.ctx,
      port: 0,
      webRoot: '/nonexistent-web-root',
      httpLimits: {
        headersTimeoutMs: 400,
        requestTimeoutMs: 800,
        keepAliveTimeoutMs: 300,
        maxConnections: 40,
        maxRequestBodiesPerPrincipal: 2,
      },
    });
  });
  afterAll(async () => {
    await server.close();
    await h.close();
  });

  for (const path of ['/rpc', '/mcp', '/media']) {
    it(`answers an unauthenticated POST ${path} with 401 before reading its declared 4 MiB body`, async () => {
      const raw = await openRaw(server.url);
      raw.write(
        headersOnly(server.url, 'POST', path, {
          'content-type': 'application/json',
          'content-length': FOUR_MIB,
        }),
      );
      const text = await raw.waitFor('\r\n\r\n');
      expect(text).toMatch(/^HTTP\/1\.1 401 /);
      // The unread body is never drained: the connection closes.
      await raw.closed;
    });
  }

  it('refuses a body on an unknown route without reading it (413, connection closed)', async () => {
    const raw = await openRaw(server.url);
    raw.write(
      headersOnly(server.url, 'POST', '/no-such-route', {
        'content-type': 'text/plain',
        'content-length': FOUR_MIB,
      }),
    );
    const text = await raw.closed;
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('holds at most the cap of half-sent bodies per principal; the next is 429, unread', async () => {
    const head = headersOnly(server.url, 'POST', '/rpc', {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-length': FOUR_MIB,
    });
    const conns = await Promise.all([0, 1, 2].map(() => openRaw(server.url)));
    for (const raw of conns) raw.write(head);
    // Whichever arrives third is refused without its body being read; the other two are reading.
    const refused = await Promise.race(conns.map((raw) => raw.closed.then(() => raw)));
    expect(refused.received()).toMatch(/^HTTP\/1\.1 429 /);
    for (const raw of conns.filter((c) => c !== refused)) {
      expect(raw.received()).toBe('');
      raw.destroy();
    }
  });

  it('counts the body cap per principal across /rpc and /mcp together', async () => {
    const head = (path: string) =>
      headersOnly(server.url, 'POST', path, {
        authorization: `Bearer ${agentToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': FOUR_MIB,
      });
    const conns = await Promise.all(
      ['/rpc', '/rpc', '/mcp'].map(async (path) => {
        const raw = await openRaw(server.url);
        raw.write(head(path));
        return raw;
      }),
    );
    // Two bodies in flight on either route fill the cap of 2: whichever arrives third is refused.
    const refused = await Promise.race(conns.map((raw) => raw.closed.then(() => raw)));
    expect(refused.received()).toMatch(/^HTTP\/1\.1 429 /);
    for (const raw of conns.filter((c) => c !== refused)) {
      expect(raw.received()).toBe('');
      raw.destroy();
    }
  });

  it("refuses a person's POST /mcp with 403 before reading its body", async () => {
    const raw = await openRaw(server.url);
    raw.write(
      headersOnly(server.url, 'POST', '/mcp', {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': FOUR_MIB,
      }),
    );
    const text = await raw.waitFor('\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 403 /);
    await raw.closed;
  });

  it('closes a connection whose headers never finish (slow loris) after the header timeout', async () => {
    const raw = await openRaw(server.url);
    const started = Date.now();
    raw.write(`GET /healthz HTTP/1.1\r\nhost: ${new URL(server.url).host}\r\nx-slow: `);
    await raw.closed;
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('closes a request whose body stalls after the request timeout, even with a valid token', async () => {
    const raw = await openRaw(server.url);
    raw.write(
      headersOnly(server.url, 'POST', '/rpc', {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': 1000,
      }),
    );
    raw.write('{"jsonrpc":');
    const text = await raw.closed;
    expect(text === '' || /^HTTP\/1\.1 408 /.test(text)).toBe(true);
  });

  it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
    const raw = await openRaw(server.url);
    raw.write(headersOnly(server.url, 'GET', '/healthz'));
    await raw.waitFor('"status":"ok"');
    await raw.closed;
  });

  it('accepts no more than the connection cap at once', async () => {
    // Its own server: the sockets held here send nothing, so the 400 ms header deadline above
    // would close them while a loaded machine is still opening the rest.
    const capped = await startHostServer({
      ctx: h.ctx,
      port: 0,
      webRoot: '/nonexistent-web-root',
      httpLimits: { maxConnections: 40 },
    });
    const conns = await Promise.all(Array.from({ length: 40 }, () => openRaw(capped.url)));
    try {
      const extra = await openRaw(capped.url);
      extra.write(headersOnly(capped.url, 'GET', '/healthz'));
      expect(await extra.closed).toBe('');
    } finally {
      for (const c of conns) c.destroy();
      await capped.close();
    }
  });
});
