import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueToken } from '../../src/host/identity/principals.js';
import { type HostServer, startHostServer } from '../../src/surfaces/http/server.js';
import { openTestHost, type TestHost } from '../support/host.js';

/** POST /media with `X-Filename` written as these exact header bytes (Node sends strings as Latin-1). */
function upload(url: string, token: string, nameBytes: Buffer): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/media`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/octet-stream',
        'x-filename': nameBytes.toString('latin1'),
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
      );
    });
    req.on('error', reject);
    req.end(Buffer.from('some bytes'));
  });
}

describe('POST /media: the X-Filename header is stored exactly or refused', () => {
  let h: TestHost;
  let server: HostServer;
  let token: string;
  beforeAll(async () => {
    h = await openTestHost();
    server = await startHostServer({ ctx: h.ctx, port: 0, webRoot: '/nonexistent-web-root' });
    token = await issueToken(h.ctx, 'owner');
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  it.each([
    ['percent-encoded UTF-8', Buffer.from(encodeURIComponent('café 😀.png')), 'café 😀.png'],
    ['raw UTF-8 bytes', Buffer.from('café 😀.png', 'utf8'), 'café 😀.png'],
    ['ASCII that is not percent-encoding', Buffer.from('100% done.txt'), '100% done.txt'],
  ])('keeps a name sent as %s', async (_how, bytes, stored) => {
    const reply = await upload(server.url, token, bytes);
    expect(reply).toMatchObject({ status: 201, json: { name: stored } });
  });

  it('refuses raw bytes that are not UTF-8 (no Latin-1 mojibake, no U+FFFD), storing nothing', async () => {
    const count = async () => (await h.ctx.store.db.selectFrom('media').select('id').execute()).length;
    const before = await count();
    const reply = await upload(
      server.url,
      token,
      Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x70, 0x6e, 0x67]),
    );
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.json)).toContain('X-Filename is not UTF-8');
    expect(await count()).toBe(before);
  });
});

describe('POST /mcp: JSON bytes that are not UTF-8 are refused, not decoded with U+FFFD', () => {
  let h: TestHost;
  let server: HostServer;
  let token: string;
  beforeAll(async () => {
    h = await openTestHost();
    await h.agent('bot');
    server = await startHostServer({ ctx: h.ctx, port: 0, webRoot: '/nonexistent-web-root' });
    token = await issueToken(h.ctx, 'bot');
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  const call = (bytes: Buffer) =>
    fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: bytes,
    });
  const send = (body: string) =>
    Buffer.from(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'message_send', arguments: { to: 'owner', body } },
      }),
    );
  const bodies = async () =>
    (await h.ctx.store.db.selectFrom('messages').select('body').execute()).map((r) => r.body);

  it('refuses a tools/call whose body bytes are not UTF-8, sending nothing', async () => {
    const bytes = send('caf-X');
    bytes[bytes.indexOf('X')] = 0xe9;
    const res = await call(bytes);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('not valid UTF-8');
    expect(await bodies()).toEqual([]);
  });

  it('still sends a UTF-8 tools/call exactly', async () => {
    const res = await call(send('café 😀'));
    expect(res.status).toBe(200);
    await res.text();
    expect(await bodies()).toEqual(['café 😀']);
  });
});
