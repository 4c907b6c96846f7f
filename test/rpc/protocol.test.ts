import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { SluiceErrorCode } from '../../src/core/errors.js';
import { SluiceError } from '../../src/core/errors.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { RPC_CODE_FOR, toRpcError } from '../../src/surfaces/rpc/errors.js';
import { openServedHost, type RpcClient, type ServedHost } from './support.js';

describe('JSON-RPC protocol rules', () => {
  let h: ServedHost;
  let owner: RpcClient;

  beforeAll(async () => {
    h = await openServedHost();
    await h.agent('helper');
    await sendMessage(h.ctx, h.owner, { to: 'helper', body: 'hello' });
    owner = await h.client();
  });
  afterAll(async () => h.close());

  it('answers an unknown params field with -32602 naming the field', async () => {
    const reply = await owner.call('queue.page', { agent: 'helper', sizee: 10 });
    expect(reply.error).toMatchObject({ code: -32602, data: { code: 'invalid_params', field: 'sizee' } });
    expect(reply.error?.message).toContain('"sizee"');
  });

  it('answers a badly typed field with -32602 naming its path', async () => {
    const reply = await owner.call('subscribe', { queues: ['helper', 7] });
    expect(reply.error).toMatchObject({ code: -32602, data: { field: 'queues.1' } });
  });

  it('answers malformed JSON with -32700 and id null', async () => {
    const reply = await owner.sendRaw('{"jsonrpc":"2.0","id":1,"method":', null);
    expect(reply.error).toMatchObject({ code: -32700, data: { code: 'parse_error' } });
    expect(reply.id).toBeNull();
  });

  it('refuses batches, non-objects, a wrong jsonrpc version and unknown methods with one clear code each', async () => {
    expect((await owner.sendRaw('[{"jsonrpc":"2.0","id":1,"method":"host.hello"}]')).error?.code).toBe(
      -32600,
    );
    expect((await owner.sendRaw('42')).error?.code).toBe(-32600);
    expect((await owner.sendRaw('{"jsonrpc":"1.0","id":"v","method":"host.hello"}', 'v')).error?.code).toBe(
      -32600,
    );
    const unknown = await owner.call('queue.explode', {});
    expect(unknown.error).toMatchObject({ code: -32601, data: { code: 'method_not_found' } });
    expect((await owner.call('host.hello', [1, 2])).error?.code).toBe(-32602);
  });

  it('answers an object without an id that is not a request (no method, a wrong version) with -32600 and id null', async () => {
    const ownerToken = await h.token();
    // Not a notification: a notification is a request without an id, and these are no requests.
    for (const frame of [
      '{"jsonrpc":"2.0"}',
      '{"jsonrpc":"2.0","method":5}',
      '{"method":"host.hello"}',
      '{}',
    ]) {
      const reply = await owner.sendRaw(frame, null);
      expect(reply.error, frame).toMatchObject({ code: -32600, data: { code: 'invalid_request' } });
      expect(reply.id).toBeNull();
    }
    // A well-formed notification of an unknown method stays unanswered (as any notification).
    owner.ws.send('{"jsonrpc":"2.0","method":"queue.explode"}');
    expect((await owner.call('host.hello', {}, 'after-unknown-notification')).result).toBeDefined();
    // Over POST the same: 200 with the error, where a notification gets 204.
    const post = (body: string) =>
      fetch(`${h.server.url}/rpc`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ownerToken}`, 'content-type': 'application/json' },
        body,
      });
    const refused = await post('{"jsonrpc":"2.0"}');
    expect(refused.status).toBe(200);
    expect(await refused.json()).toMatchObject({ id: null, error: { code: -32600 } });
    expect((await post('{"jsonrpc":"2.0","method":"host.hello"}')).status).toBe(204);
  });

  it('does not answer notifications, and keeps replies in request order', async () => {
    owner.ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'host.hello' }));
    const hello = await owner.call('host.hello', {}, 'after-notification');
    expect(hello.result).toMatchObject({
      protocol: 'sluice/1',
      principal: { name: 'owner', kind: 'person' },
    });
    expect(hello.result.capabilities).toContain('sluice.queue-pages.v1');
  });

  it('maps host failures to their documented codes', async () => {
    expect((await owner.call('queue.read', { agent: 'helper', messageId: 'nope' })).error?.data.code).toBe(
      'not_found',
    );
    expect((await owner.call('queue.read', { agent: 'helper', messageId: 'nope' })).error?.code).toBe(-32004);
    await h.agent('loner');
    await h.person('stranger');
    const stranger = await h.client('stranger');
    expect((await stranger.call('queue.summary', { agent: 'loner' })).error).toMatchObject({
      code: -32001,
      data: { code: 'denied' },
    });
    const ch = await owner.ok('channel.create', { name: 'ops', members: ['helper'] });
    expect((await owner.call('channel.create', { name: 'ops', members: [] })).error?.code).toBe(-32009);
    await h.person('guest');
    const guest = await h.client('guest');
    expect((await guest.call('channel.history', { channelId: ch.id })).error).toMatchObject({ code: -32003 });
    expect((await owner.call('channel.history', { channelId: ch.id, cursor: 'AAAA' })).error?.code).toBe(
      -32010,
    );
  });

  it('has one distinct JSON-RPC code per Sluice error code, carried with the string code in data', () => {
    const codes = Object.keys(RPC_CODE_FOR) as SluiceErrorCode[];
    expect(new Set(Object.values(RPC_CODE_FOR)).size).toBe(codes.length);
    for (const code of codes) {
      expect(toRpcError(new SluiceError(code, 'line\nbreak'))).toEqual({
        code: RPC_CODE_FOR[code],
        message: 'line break',
        data: { code },
      });
    }
    expect(toRpcError(new Error('secret stack'))).toEqual({
      code: -32603,
      message: 'internal error',
      data: { code: 'internal' },
    });
  });

  it('refuses a frame over 4 MiB by closing that socket, and keeps serving everyone else', async () => {
    const victim = await h.client();
    const closed = new Promise<number>((resolve) => victim.ws.once('close', (code) => resolve(code)));
    victim.ws.send('x'.repeat(4 * 1024 * 1024 + 1));
    expect(await closed).toBe(1009);
    expect((await owner.call('host.hello')).result.protocol).toBe('sluice/1');
  });

  it('lets a person manage the queue of an agent it shares a channel with, returning the new summary', async () => {
    const paused = await owner.ok('queue.pause', { agent: 'helper', reason: 'lunch' });
    expect(paused.summary.paused).toBe(true);
    const resumed = await owner.ok('queue.resume', { agent: 'helper' });
    expect(resumed.summary.paused).toBe(false);
  });

  it('marks messages read and shows the mark in the channel history', async () => {
    const sent = await owner.ok('message.send', { to: 'helper', body: 'read me' });
    expect(await owner.ok('message.markRead', { messageId: sent.message_id })).toMatchObject({
      channelId: sent.channel_id,
    });
    const history = await owner.ok('channel.history', { channelId: sent.channel_id });
    expect(history.readMarks).toEqual([
      { principal: 'owner', lastReadSeq: expect.any(Number), updatedAt: expect.any(String) },
    ]);
    const edited = await owner.ok('message.edit', { messageId: sent.message_id, body: 'read me, edited' });
    expect(edited.revision).toBe(2);
    const after = await owner.ok('channel.history', { channelId: sent.channel_id, size: 1 });
    expect(after.messages[0]).toMatchObject({
      body: 'read me, edited',
      revision: 2,
      editedAt: expect.any(String),
    });
  });
});

describe('shutdown', () => {
  it('closes every WebSocket with 1001 going away', async () => {
    const h = await openServedHost();
    const client = await h.client();
    const closed = new Promise<number>((resolve) => client.ws.once('close', (code) => resolve(code)));
    await h.server.close();
    expect(await closed).toBe(1001);
    expect(h.server.connections.size).toBe(0);
    await h.close();
  });
});

describe('authentication and queue access', () => {
  let h: ServedHost;
  beforeAll(async () => {
    h = await openServedHost();
    await h.agent('helper');
    await h.agent('rival');
    await sendMessage(h.ctx, h.owner, { to: 'helper', body: 'hello' });
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

  it('refuses a WebSocket without a token, with a bad token, or a cookie from another origin', async () => {
    expect(await upgradeStatus({})).toBe(401);
    expect(await upgradeStatus({ authorization: 'Bearer slu_not-a-token' })).toBe(401);
    const token = await h.token();
    const cookie = await h.sessionCookie();
    expect(await upgradeStatus({ cookie, origin: 'http://evil.example' })).toBe(403);
    expect(await upgradeStatus({ cookie, origin: h.server.url })).toBe(101);
    // An access token is not a session cookie, and a session cookie is not an access token.
    expect(
      await upgradeStatus({ cookie: `${h.server.app.sessionCookieName}=${token}`, origin: h.server.url }),
    ).toBe(401);
    expect(await upgradeStatus({ authorization: `Bearer ${cookie.split('=')[1]}` })).toBe(401);
    expect(await upgradeStatus({ authorization: `Bearer ${token}` })).toBe(101);
  });

  it('refuses POST /rpc without a token', async () => {
    const res = await fetch(`${h.server.url}/rpc`, {
      method: 'POST',
      body: '{"jsonrpc":"2.0","id":1,"method":"host.hello"}',
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: 'unauthenticated' } });
  });

  it('lets an agent read its own queue but not another agent’s', async () => {
    const helper = await h.client('helper');
    expect((await helper.ok('queue.summary', { agent: 'helper' })).total).toBe(1);
    const rival = await h.client('rival');
    expect((await rival.call('queue.page', { agent: 'helper' })).error?.code).toBe(-32001);
  });

  it('refuses a person who shares no channel with the agent', async () => {
    await h.person('stranger');
    const stranger = await h.client('stranger');
    expect((await stranger.call('queue.summary', { agent: 'helper' })).error?.data.code).toBe('denied');
    expect((await stranger.call('subscribe', { queues: ['helper'] })).error?.data.code).toBe('denied');
  });

  it('needs the WebSocket for subscriptions', async () => {
    const res = await fetch(`${h.server.url}/rpc`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await h.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params: { queues: ['helper'] } }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 1, error: { code: -32602 } });
  });
});
