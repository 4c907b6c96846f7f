import { afterEach, describe, expect, it } from 'vitest';
import { fuzzRpcPost, fuzzRpcWebSocket, replyProblems } from '../../proof/fuzz-rpc.js';
import { stateSnapshot } from '../../proof/state-snapshot.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';

describe('JSON-RPC bad-input fuzzing against a real server', () => {
  it('answers every WebSocket frame with a well-formed reply or a 1009 close, stays up, and changes nothing on refusal', {
    timeout: 120_000,
  }, async () => {
    const report = await fuzzRpcWebSocket(300, 11);
    expect(report.inputs).toBe(300);
    expect(report.failures).toEqual([]);
  });

  it('answers every POST body with a well-formed reply, 204 for a notification, or 413, and changes nothing on refusal', {
    timeout: 120_000,
  }, async () => {
    const report = await fuzzRpcPost(300, 12);
    expect(report.inputs).toBe(300);
    expect(report.failures).toEqual([]);
  });
});

describe('the reply checker the campaign relies on', () => {
  it('flags replies that are not well-formed JSON-RPC errors', () => {
    expect(replyProblems('{"jsonrpc":"2.0","id":1,"result":{}}')).toEqual([]);
    expect(
      replyProblems(
        '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":{"code":"parse_error"}}}',
      ),
    ).toEqual([]);
    expect(replyProblems('not json')).not.toEqual([]);
    expect(replyProblems('{"jsonrpc":"2.0","id":1}')).not.toEqual([]);
    expect(
      replyProblems('{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m","data":{"code":"c"}}}'),
    ).not.toEqual([]);
    expect(
      replyProblems(
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom","data":{"code":"internal"}}}',
      ),
    ).toContainEqual(expect.stringMatching(/internal/));
    expect(
      replyProblems(
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"two\\nlines","data":{"code":"invalid_params"}}}',
      ),
    ).not.toEqual([]);
  });
});

describe('regressions found by the campaign', () => {
  let h: ServedHost | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  // message.send to a principal created the DM channel before refusing a bad attachment,
  // reply_to or empty body: a refused send left a channel, two memberships and an event behind.
  it.each([
    ['an unknown attachment', { attachments: ['a_nope'] }, 'not_found'],
    ['a reply_to from another channel', { reply_to: 'PARENT' }, 'not_found'],
    ['an empty body', { body: '' }, 'invalid_params'],
  ])('a send to a principal with no DM yet refused for %s changes nothing', async (_what, extra, code) => {
    h = await openServedHost();
    const alice = await h.person('alice');
    await h.agent('bot');
    const parent = await sendMessage(h.ctx, alice, { to: 'owner', body: 'elsewhere' });
    const params = { to: 'bot', body: 'hi', ...extra };
    if ('reply_to' in params) params.reply_to = parent.message_id;
    const client = await h.client('alice');
    const before = await stateSnapshot(h.ctx);
    const reply = await client.call('message.send', params);
    expect(reply.error?.data.code).toBe(code);
    expect(await stateSnapshot(h.ctx)).toBe(before);
    // The same send without the bad part still creates the DM and delivers.
    const ok = await client.ok('message.send', { to: 'bot', body: 'hi' });
    expect(ok.message_id).toEqual(expect.any(String));
    expect(await stateSnapshot(h.ctx)).not.toBe(before);
  });
});
