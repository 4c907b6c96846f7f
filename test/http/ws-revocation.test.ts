// An open WebSocket does not outlive its credential: revoking the token, logging out or the
// session expiring closes it at its next request (found in review: the principal was fixed at
// upgrade and the socket kept working indefinitely).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { issueAccessToken } from '../../src/host/principals.js';
import { endSession, revokeCredential } from '../../src/host/sessions.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';

let h: ServedHost;
beforeAll(async () => {
  h = await openServedHost();
});
afterAll(async () => h.close());

function connect(headers: Record<string, string>): Promise<WebSocket> {
  const ws = new WebSocket(`${h.server.url.replace('http', 'ws')}/rpc`, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('close', (code) => closeCodes.set(ws, code));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
}

/** Sends one request; resolves with its reply, or with the close code if the socket closes first. */
function request(ws: WebSocket, id: number): Promise<{ reply?: unknown; closed?: number }> {
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData) => {
      const msg = JSON.parse(data.toString());
      if (msg.id !== id) return;
      ws.off('close', onClose);
      ws.off('message', onMessage);
      resolve({ reply: msg });
    };
    const onClose = (code: number) => {
      ws.off('message', onMessage);
      resolve({ closed: code });
    };
    ws.on('message', onMessage);
    ws.once('close', onClose);
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'host.hello', params: {} }));
  });
}

/** The socket's close code (at once if it already closed). */
function closed(ws: WebSocket): Promise<number> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve(closeCodes.get(ws) ?? -1);
  return new Promise((resolve) => ws.once('close', (code) => resolve(code)));
}
const closeCodes = new WeakMap<WebSocket, number>();

describe('a WebSocket whose credential ends', () => {
  it('is closed with 4401 at its next request after its token is revoked (that request may still be answered)', async () => {
    const issued = await issueAccessToken(h.ctx, 'owner');
    const ws = await connect({ authorization: `Bearer ${issued.token}` });
    expect((await request(ws, 1)).reply).toMatchObject({ result: { protocol: 'sluice/1' } });
    await revokeCredential(h.ctx, issued.id);
    await request(ws, 2);
    expect(await closed(ws)).toBe(4401);
  });

  it('is closed with 4401 at its next request after the session logs out', async () => {
    const cookie = await h.sessionCookie();
    const origin = new URL(h.server.url).origin;
    const ws = await connect({ cookie, origin });
    expect((await request(ws, 1)).reply).toMatchObject({ result: { protocol: 'sluice/1' } });
    await endSession(h.ctx, cookie.slice(cookie.indexOf('=') + 1));
    await request(ws, 2);
    expect(await closed(ws)).toBe(4401);
  });

  it('keeps serving while the credential is current', async () => {
    const ws = await connect({ authorization: `Bearer ${await h.token()}` });
    for (let id = 1; id <= 3; id++) expect((await request(ws, id)).reply).toMatchObject({ id });
    ws.close();
  });
});
