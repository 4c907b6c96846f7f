// Every answer the host gives to a bad HTTP request carries a Sluice error code, in the same
// `{error: {code, message}}` shape as a handler's refusal: a body over the limit, a malformed URL,
// headers over Node's limit, and an id longer than the router takes under /media. Before, the
// first three answered in Fastify's or Node's own shapes (or none) and the last served the web page.
import { request } from 'node:http';
import { connect } from 'node:net';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServedHost, type ServedHost } from '../rpc/support.js';

type Coded = { error: { code: string; message: string } };

function expectCoded(body: string, code: string): void {
  const parsed = JSON.parse(body) as Coded;
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(parsed.error.code).toBe(code);
  expect(parsed.error.message).not.toMatch(/\n|FST_|at .*\.js/);
}

describe('the shape of a refused HTTP request', () => {
  let h: ServedHost;
  let auth: { authorization: string };

  beforeAll(async () => {
    h = await openServedHost();
    auth = { authorization: `Bearer ${await h.token()}` };
  });
  afterAll(() => h.close());

  const inject = (opts: InjectOptions) => h.server.app.inject(opts);

  it('a body over the limit: 413 too_large', async () => {
    const res = await inject({
      method: 'POST',
      url: '/rpc',
      headers: auth,
      payload: 'x'.repeat(4 * 1024 * 1024 + 1),
    });
    expect(res.statusCode).toBe(413);
    expectCoded(res.body, 'too_large');
  });

  it('a URL that does not decode: 400 invalid_params', async () => {
    const res = await inject({ method: 'GET', url: '/media/%E0%A4%A', headers: auth });
    expect(res.statusCode).toBe(400);
    expectCoded(res.body, 'invalid_params');
  });

  it('an id under /media longer than the router takes: 404 not_found, not the web page', async () => {
    const res = await inject({ method: 'GET', url: `/media/${'a'.repeat(500)}`, headers: auth });
    expect(res.statusCode).toBe(404);
    expectCoded(res.body, 'not_found');
  });

  it('an unknown path under /rpc or /mcp: 404 not_found, not the web page', async () => {
    for (const url of ['/rpc/x', '/mcp/x', '/media']) {
      const res = await inject({ method: 'GET', url, headers: auth });
      expect(res.statusCode, url).toBe(404);
      expectCoded(res.body, 'not_found');
    }
  });

  it("headers over Node's limit: 431 too_large, then the connection closes", async () => {
    const { hostname, port } = new URL(h.server.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      });
      let text = '';
      socket.on('data', (d) => {
        text += d.toString();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expectCoded(answer.slice(answer.indexOf('\r\n\r\n') + 4), 'too_large');
  });

  it('the host still answers after each of them', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      request(`${h.server.url}/healthz`, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(200);
  });
});
