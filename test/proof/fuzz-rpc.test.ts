import { describe, expect, it } from 'vitest';
import { fuzzRpcPost, fuzzRpcWebSocket, replyProblems } from '../../proof/fuzz-rpc.js';

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
