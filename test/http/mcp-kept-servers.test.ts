// /mcp keeps one tool server per agent across requests (src/surfaces/http/mcp-servers.ts). Kept
// servers must never answer for anyone but the request's own principal: agents interleaving
// requests (with the same JSON-RPC ids) each get their own results, a revoked token reaches no
// kept server, and a server handed another principal's call refuses it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueAccessToken, type Principal } from '../../src/host/identity/principals.js';
import { revokeCredential } from '../../src/host/identity/sessions.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { RequestRouterTransport } from '../../src/surfaces/mcp/request-router.js';
import { buildMcpServer } from '../../src/surfaces/mcp/tools.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';

const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
};

interface ToolReply {
  status: number;
  /** The parsed text of the result's one content block (absent when the request was refused). */
  value?: Record<string, unknown>;
  isError?: boolean;
  id?: unknown;
}

async function callTool(
  url: string,
  token: string,
  name: string,
  args: Record<string, unknown> = {},
): Promise<ToolReply> {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...HEADERS, authorization: `Bearer ${token}` },
    // Every client uses id 1: the kept server must still tell the requests apart.
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status };
  const data = /^data: (.*)$/m.exec(text)?.[1];
  if (data === undefined) throw new Error(`no SSE data in ${text.slice(0, 300)}`);
  const message = JSON.parse(data) as {
    id: unknown;
    result: { content: { text: string }[]; isError?: boolean };
  };
  return {
    status: res.status,
    id: message.id,
    isError: message.result.isError === true,
    value: JSON.parse(message.result.content[0]?.text ?? 'null'),
  };
}

describe('tool servers kept across /mcp requests', () => {
  let h: ServedHost;
  let alice: Principal;
  let bob: Principal;

  beforeAll(async () => {
    h = await openServedHost();
    alice = await h.agent('alice-bot');
    bob = await h.agent('bob-bot');
  });
  afterAll(async () => h.close());

  it('answers two agents interleaving requests with only their own results', async () => {
    const owner = h.owner;
    const mine = { 'alice-bot': new Set<string>(), 'bob-bot': new Set<string>() };
    for (let i = 0; i < 5; i++) {
      for (const agent of ['alice-bot', 'bob-bot'] as const) {
        const sent = await sendMessage(h.ctx, owner, { to: agent, body: `for ${agent} #${i}` });
        mine[agent].add(sent.message_id);
      }
    }
    const tokens = { 'alice-bot': await h.token('alice-bot'), 'bob-bot': await h.token('bob-bot') };
    const calls = Array.from({ length: 20 }, (_, i) => {
      const agent = i % 2 === 0 ? 'alice-bot' : 'bob-bot';
      const name = i % 4 < 2 ? 'channel_read' : 'inbox_status';
      return { agent, name, reply: callTool(h.server.url, tokens[agent], name, {}) } as const;
    });
    for (const call of calls) {
      const reply = await call.reply;
      expect(reply.status).toBe(200);
      expect(reply.id).toBe(1);
      expect(reply.isError).toBe(false);
      if (call.name === 'inbox_status') {
        expect(reply.value?.agent).toBe(call.agent);
        continue;
      }
      const ids = ((reply.value?.messages as { message_id: string }[] | undefined) ?? []).map(
        (m) => m.message_id,
      );
      expect(new Set(ids)).toEqual(mine[call.agent]);
    }
  });

  it('answers concurrent sends of one agent, all with JSON-RPC id 1, each with its own message', async () => {
    const token = await h.token('alice-bot');
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        callTool(h.server.url, token, 'message_send', { to: 'owner', body: `concurrent ${i}` }),
      ),
    );
    const ids = replies.map((r) => r.value?.message_id);
    expect(new Set(ids).size).toBe(6);
    const bodies = await Promise.all(
      ids.map(async (id) => (await callTool(h.server.url, token, 'channel_read', { message_id: id })).value),
    );
    expect(bodies.map((page) => (page?.messages as { body: string }[] | undefined)?.[0]?.body)).toEqual(
      Array.from({ length: 6 }, (_, i) => `concurrent ${i}`),
    );
  });

  it('refuses a revoked token before any kept server runs, and serves the agent again with a new one', async () => {
    const issued = await issueAccessToken(h.ctx, 'bob-bot');
    const warm = await callTool(h.server.url, issued.token, 'inbox_status');
    expect(warm.value?.agent).toBe('bob-bot');
    await revokeCredential(h.ctx, issued.id);
    const before = await h.ctx.store.db
      .selectFrom('messages')
      .select((e) => e.fn.countAll().as('n'))
      .execute();
    const refused = await callTool(h.server.url, issued.token, 'message_send', {
      to: 'owner',
      body: 'after revoke',
    });
    expect(refused.status).toBe(401);
    const after = await h.ctx.store.db
      .selectFrom('messages')
      .select((e) => e.fn.countAll().as('n'))
      .execute();
    expect(after).toEqual(before);
    const fresh = await callTool(h.server.url, await h.token('bob-bot'), 'inbox_status');
    expect(fresh.value?.agent).toBe('bob-bot');
  });

  it('refuses, in the server itself, a call routed to it for another principal', async () => {
    const router = new RequestRouterTransport();
    const errors: unknown[] = [];
    const server = buildMcpServer(h.ctx, alice, {
      receipts: router,
      callerMustBeAgent: true,
      onInternalError: (err) => errors.push(err),
    });
    await server.connect(router);
    const request = {
      jsonrpc: '2.0' as const,
      id: 7,
      method: 'tools/call',
      params: { name: 'inbox_status', arguments: {} },
    };
    const holder = { hold: () => {} };
    const [asBob] = await router.dispatch(request, { principalId: bob.id, receipts: holder });
    expect(asBob).toMatchObject({ id: 7, result: { isError: true } });
    expect(JSON.stringify(asBob)).toContain('denied');
    expect(errors).toHaveLength(1);
    const [asAlice] = await router.dispatch(request, { principalId: alice.id, receipts: holder });
    expect(JSON.stringify(asAlice)).toContain('alice-bot');
    await server.close();
  });
});
