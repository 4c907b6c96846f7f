// Found by fuzzing /mcp: a tools/call whose `arguments` was not an object (null, [], "x", 5) or
// whose `name` was not a string, and any request the SDK answers itself with params of the wrong
// type (tools/list {cursor: 5}, initialize {}), were answered "internal error" (-32603) with a
// many-line zod dump. Bad input is one line with a code, over HTTP and stdio, and changes nothing.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { oneLineError } from '../../src/surfaces/mcp/one-line-errors.js';
import { openServedHost, postMcp, type ServedHost } from '../rpc/support.js';
import { SLUICE_BIN } from '../support/host.js';
import { pendingIds } from './support.js';

type Reply = {
  id?: unknown;
  result?: { content: { text: string }[]; isError?: boolean };
  error?: { code: number; message: string };
};

const BAD_ARGUMENTS: unknown[] = [null, [], 'x', 5, true];
const NOT_A_NAME: Record<string, unknown>[] = [
  {},
  { name: 5 },
  { name: null, arguments: {} },
  { arguments: {} },
];

/** The refusal a tool result carries, parsed from its text. */
function refusal(reply: Reply): { code: string; message: string } {
  expect(reply.result?.isError).toBe(true);
  return (JSON.parse(reply.result?.content[0]?.text ?? '{}') as { error: { code: string; message: string } })
    .error;
}

describe('malformed MCP requests are refused in one line with a code, and change nothing', () => {
  let h: ServedHost;
  let bot: Principal;
  let token: string;
  let pending: string[];

  beforeAll(async () => {
    h = await openServedHost();
    bot = await h.agent('bot', 'turn');
    token = await h.token('bot');
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'still here' });
    pending = await pendingIds(h.ctx, bot.id);
  });
  afterAll(async () => h.close());

  async function post(method: string, params: unknown): Promise<Reply> {
    const { status, message } = await postMcp(h.server.url, token, method, params, 7);
    expect(status).toBe(200);
    return message as Reply;
  }

  it('tools/call: arguments that are not an object, a name that is not a string', async () => {
    for (const args of BAD_ARGUMENTS) {
      expect(refusal(await post('tools/call', { name: 'channel_read', arguments: args }))).toEqual({
        code: 'invalid_params',
        message: "arguments must be an object of channel_read's arguments",
      });
    }
    for (const params of NOT_A_NAME) {
      expect(refusal(await post('tools/call', params))).toEqual({
        code: 'invalid_params',
        message: 'name must be the name of a tool (tools/list)',
      });
    }
    // No arguments at all is still a call with none.
    const read = await post('tools/call', { name: 'inbox_status' });
    expect(read.result?.isError).toBeUndefined();
    expect(await pendingIds(h.ctx, bot.id)).toEqual(pending);
  });

  it('requests the SDK answers itself: invalid params (-32602), one line naming the field', async () => {
    const list = await post('tools/list', { cursor: 5 });
    expect(list).toMatchObject({ id: 7, error: { code: -32602 } });
    expect(list.error?.message).toBe('"params"."cursor": Invalid input: expected string, received number');
    const init = await post('initialize', {});
    expect(init).toMatchObject({ id: 7, error: { code: -32602 } });
    expect(init.error?.message).toMatch(/^"params"\."protocolVersion": Invalid input/);
    expect(init.error?.message).not.toContain('\n');
    expect(await pendingIds(h.ctx, bot.id)).toEqual(pending);
  });

  it('the same over stdio (sluice mcp, a real child process)', async () => {
    const child = spawn(process.execPath, [SLUICE_BIN, 'mcp', '--as', 'bot'], {
      env: { ...process.env, SLUICE_HOME: h.home, SLUICE_AS: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const waiting = new Map<number, (r: Reply) => void>();
    createInterface({ input: child.stdout }).on('line', (line) => {
      const reply = JSON.parse(line) as Reply & { id: number };
      waiting.get(reply.id)?.(reply);
    });
    const ask = (id: number, method: string, params: unknown) =>
      new Promise<Reply>((resolve) => {
        waiting.set(id, resolve);
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      });
    try {
      const init = await ask(1, 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'malformed-test', version: '0' },
      });
      expect(init.error).toBeUndefined();
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      expect(refusal(await ask(2, 'tools/call', { name: 'channel_read', arguments: null })).code).toBe(
        'invalid_params',
      );
      expect(refusal(await ask(3, 'tools/call', { name: 5 })).code).toBe('invalid_params');
      const list = await ask(4, 'tools/list', { cursor: 5 });
      expect(list.error).toEqual({
        code: -32602,
        message: '"params"."cursor": Invalid input: expected string, received number',
      });
    } finally {
      child.stdin.end();
      await new Promise((resolve) => child.once('exit', resolve));
    }
    expect(await pendingIds(h.ctx, bot.id)).toEqual(pending);
  });

  it('leaves every other message as it is', () => {
    const internal = { jsonrpc: '2.0' as const, id: 1, error: { code: -32603, message: 'Internal error' } };
    const notFound = { jsonrpc: '2.0' as const, id: 1, error: { code: -32601, message: '[{"path":[]}]' } };
    const notIssues = { jsonrpc: '2.0' as const, id: 1, error: { code: -32603, message: '[1, 2]' } };
    const result = { jsonrpc: '2.0' as const, id: 1, result: {} };
    for (const m of [internal, notFound, notIssues, result]) expect(oneLineError(m)).toBe(m);
  });
});
