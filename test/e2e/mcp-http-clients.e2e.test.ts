// The real Claude Code and Codex CLIs with the host's `/mcp` (Streamable HTTP, an agent's bearer
// token) as their MCP server, against the scripted model server: each client copes with the
// stateless endpoint (GET and DELETE are 405) and a tool call's result reaches the model.
// Needs the pinned clients; run with:
//   SLUICE_E2E=1 npx vitest run test/e2e/mcp-http-clients.e2e.test.ts
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { issueToken } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';
import { ensureClients } from './support/clients.js';
import {
  findTool,
  isMainAgentRequest,
  type ModelServer,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { runClaude } from './support/run-claude.js';
import { runCodex } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

/** What clients asked of `/mcp` and what they were answered, as "METHOD status". */
function recordMcpRequests(h: ServedHost): string[] {
  const seen: string[] = [];
  h.server.app.server.on('request', (req, res) => {
    if (req.url === '/mcp') res.once('finish', () => seen.push(`${req.method} ${res.statusCode}`));
  });
  return seen;
}

describe.skipIf(!enabled)('real clients with the host over HTTP /mcp', () => {
  let h: ServedHost;
  let server: ModelServer;

  beforeAll(async () => {
    await ensureClients();
    h = await openServedHost();
    await h.agent('bot');
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'the deploy is green' });
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  test('claude: inbox_status over /mcp reaches the model', async () => {
    server.setScript((req, ctx) => {
      if (!isMainAgentRequest(req)) return { text: 'ok' };
      const tool = findTool(req, 'mcp__sluice__inbox_status');
      if (!tool) throw new Error('inbox_status was not offered');
      if (ctx.mainIndex === 0) return { toolCalls: [{ name: tool.name, input: {} }] };
      return { text: 'done' };
    });
    const seen = recordMcpRequests(h);
    const r = await runClaude({
      server,
      prompt: 'how is my inbox',
      mcpConfig: {
        mcpServers: {
          sluice: {
            type: 'http',
            url: `${h.server.url}/mcp`,
            headers: { Authorization: `Bearer ${await issueToken(h.ctx, 'bot')}` },
          },
        },
      },
      allowedTools: ['mcp__sluice__inbox_status'],
    });
    expect(r.code, r.stderr).toBe(0);
    expect(server.scriptErrors).toEqual([]);
    const received = toolResults(server.mainCalls().at(-1)!);
    expect(received).toHaveLength(1);
    expect(received[0]!.isError).not.toBe(true);
    expect(JSON.parse(received[0]!.text).agent).toBe('bot');
    // It asked for the standalone stream, took the 405 as "none", and went on with POSTs.
    expect(seen).toContain('GET 405');
    expect(seen.filter((s) => s.startsWith('GET ') && s !== 'GET 405')).toEqual([]);
  }, 300_000);

  test('codex: inbox_status over /mcp reaches the model', async () => {
    server.setScript((req) => {
      if (toolResults(req).length > 0) return { text: 'done' };
      const tool = findTool(req, /inbox_status/);
      if (!tool) throw new Error('inbox_status was not offered');
      return { toolCalls: [{ name: tool.name, input: {} }] };
    });
    const seen = recordMcpRequests(h);
    const r = await runCodex({
      server,
      prompt: 'how is my inbox',
      extraToml: [
        '[mcp_servers.sluice]',
        `url = ${JSON.stringify(`${h.server.url}/mcp`)}`,
        'bearer_token_env_var = "SLUICE_MCP_TOKEN"',
      ].join('\n'),
      env: { SLUICE_MCP_TOKEN: await issueToken(h.ctx, 'bot') },
      timeoutMs: 200_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(server.scriptErrors).toEqual([]);
    const received = toolResults(server.mainCalls().at(-1)!);
    expect(received).toHaveLength(1);
    expect(received[0]!.text).toContain('"agent":"bot"');
    // Codex asks for no GET stream; had it, only a 405 would do.
    expect(seen.filter((s) => s.startsWith('GET ') && s !== 'GET 405')).toEqual([]);
  }, 300_000);
});
