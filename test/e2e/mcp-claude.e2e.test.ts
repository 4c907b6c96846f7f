// The real Claude Code CLI with `sluice mcp --as bot` as its MCP server, against the scripted
// model server: what the model receives from channel_read is the whole result, within budget.
// Needs the built CLI (`npm run build`) and the pinned clients; run with:
//   SLUICE_E2E=1 npx vitest run test/e2e/mcp-claude.e2e.test.ts
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { channelRead } from '../../src/host/reads/index.js';
import { openTestHost, SLUICE_BIN, type TestHost } from '../support/host.js';
import { ensureClients } from './support/clients.js';
import {
  findTool,
  isMainAgentRequest,
  type ModelServer,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { runClaude } from './support/run-claude.js';

const enabled = process.env.SLUICE_E2E === '1';
const BUDGET = 12_000;

describe.skipIf(!enabled)('claude with sluice mcp', () => {
  let t: TestHost;
  let bot: Principal;
  let server: ModelServer;

  beforeAll(async () => {
    await ensureClients();
    t = await openTestHost();
    bot = await t.agent('bot');
    const alice = await t.person('alice');
    await t.manage('bot', 'alice'); // only its managers add an agent to a group
    await createChannel(t.ctx, alice, { name: 'general', members: ['bot'] });
    // Enough chat to cut the first page at the budget, with content that stresses escaping.
    for (let i = 0; i < 40; i++) {
      const body = `${i}: ${'the deploy is green 👍 测试 "quoted" \\ back\nslash '.repeat(20)}`;
      await sendMessage(t.ctx, alice, { to: '#general', body });
    }
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
    await t?.close();
  });

  test('channel_read results reach the model whole and within budget, and paging with nextCursor works', async () => {
    server.setScript((req, ctx) => {
      if (!isMainAgentRequest(req)) return { text: 'ok' };
      const tool = findTool(req, 'mcp__sluice__channel_read');
      if (!tool) throw new Error('channel_read was not offered');
      if (ctx.mainIndex === 0) return { toolCalls: [{ name: tool.name, input: { limit: 100 } }] };
      if (ctx.mainIndex === 1) {
        const page = JSON.parse(toolResults(req).at(-1)?.text ?? '{}');
        return { toolCalls: [{ name: tool.name, input: { limit: 100, cursor: page.nextCursor } }] };
      }
      return { text: 'done' };
    });
    const r = await runClaude({
      server,
      prompt: 'read my messages',
      mcpConfig: {
        mcpServers: {
          sluice: {
            command: process.execPath,
            args: [SLUICE_BIN, 'mcp', '--as', 'bot'],
            env: { SLUICE_HOME: t.home },
          },
        },
      },
      allowedTools: ['mcp__sluice__channel_read'],
    });
    expect(r.code, r.stderr).toBe(0);
    expect(server.scriptErrors).toEqual([]);
    const last = server.mainCalls().at(-1)!;
    const received = toolResults(last);
    expect(received).toHaveLength(2);

    // What the model got is byte for byte what the host renders for the same reads (peeks are pure).
    const first = await channelRead(t.ctx, bot, { limit: 100 });
    const cursor = (first.value as { nextCursor: string }).nextCursor;
    const second = await channelRead(t.ctx, bot, { limit: 100, cursor });
    expect(received[0]!.text).toBe(first.text);
    expect(received[1]!.text).toBe(second.text);
    for (const result of received) {
      expect(result.isError).not.toBe(true);
      expect(result.text.length).toBeLessThanOrEqual(BUDGET);
      expect(result.text).not.toMatch(/persisted-output|saved to/i);
    }
    // The first page was cut by the budget, not the count, and the walk continued after it.
    const page1 = JSON.parse(received[0]!.text);
    const page2 = JSON.parse(received[1]!.text);
    expect(page1.omitted).toBeGreaterThan(0);
    expect(page1.messages.length + page1.omitted).toBe(40);
    // Cut by whichever budget binds: 12,000 UTF-16 units or the 11,900-byte ceiling (docs/mcp.md).
    const fill = Math.max(received[0]!.text.length / BUDGET, Buffer.byteLength(received[0]!.text) / 11_900);
    expect(fill).toBeGreaterThan(0.9);
    expect(Buffer.byteLength(received[0]!.text)).toBeLessThanOrEqual(11_900);
    expect(page2.messages[0].body.startsWith(`${page1.messages.length}: `)).toBe(true);

    // The tools the model was offered are the contract's, with descriptions that teach paging.
    const names = last.body.tools
      .map((tool: { name: string }) => tool.name)
      .filter((n: string) => n.startsWith('mcp__sluice__'));
    expect(names.sort()).toEqual(
      [
        'channel_read',
        'channel_read_image',
        'channel_search',
        'inbox_status',
        'message_archive',
        'message_reply',
        'message_send',
        'message_status',
      ].map((n) => `mcp__sluice__${n}`),
    );
    expect(findTool(last, 'mcp__sluice__channel_read')!.description).toMatch(/nextCursor/);
  }, 180_000);
});
