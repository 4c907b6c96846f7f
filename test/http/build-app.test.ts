import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { issueToken } from '../../src/host/identity/principals.js';
import { buildHostApp, type HostApp, listenHostApp } from '../../src/surfaces/http/server.js';
import { INVALID_REQUEST, isExpectedFailure, RpcFailure } from '../../src/surfaces/rpc/errors.js';
import { openTestHost, type TestHost } from '../support/host.js';

describe('the host app built apart from listening', () => {
  let host: TestHost;
  let built: HostApp;

  beforeAll(async () => {
    host = await openTestHost();
    built = await buildHostApp({ ctx: host.ctx, port: 0, webRoot: '/nonexistent-web-root', mcp: false });
  });
  afterAll(async () => {
    await built.close();
    await host.close();
  });

  it('serves requests through inject with no port bound', async () => {
    expect(built.app.server.listening).toBe(false);
    const health = await built.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.json()).toEqual({ status: 'ok', logLinesDropped: 0, lastUseNotRecorded: 0 });
    const hello = await built.app.inject({
      method: 'POST',
      url: '/rpc',
      headers: { authorization: `Bearer ${await issueToken(host.ctx, 'owner')}` },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'host.hello', params: {} }),
    });
    expect(hello.json().result.principal.name).toBe('owner');
    expect(built.app.server.listening).toBe(false);
  });

  it('listens when asked, at the address it was built for', async () => {
    const server = await listenHostApp(built);
    expect(built.app.server.listening).toBe(true);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});

describe('which RPC failures are expected (told to the caller, not logged as bugs)', () => {
  const impostor = Object.assign(new Error('looks like one'), { name: 'SluiceError', rpc: {} });
  it.each([
    ['a host error with a code', new SluiceError('not_found', 'no such channel'), true],
    ['a protocol refusal', new RpcFailure(INVALID_REQUEST, 'invalid_request', 'bad'), true],
    ['an error that only takes the name', impostor, false],
    ['a plain bug', new TypeError('x is undefined'), false],
    ['a thrown non-error', null, false],
  ])('%s', (_what, err, expected) => {
    expect(isExpectedFailure(err)).toBe(expected);
  });
});
