import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { readProjection, sendMessage } from '../../src/host/messages/messages.js';
import { projectionText } from '../../src/host/messages/projection.js';
import { beginTurn, endTurn } from '../../src/host/turns/index.js';
import { openTestHost, SLUICE_BIN, type TestHost } from '../support/host.js';
import { hostileMessage, seedHostile, sweepChannel } from './hostile.js';
import {
  callerFor,
  pendingIds,
  readAllFragments,
  receiptCommitted,
  type ToolCaller,
  walkPages,
} from './support.js';

// The real server process: `node bin/sluice.js mcp --as bot` (run `npm run build` first).
describe('sluice mcp over stdio (a real child process)', () => {
  let t: TestHost;
  let bot: Principal;
  let alice: Principal;
  let mcp: ToolCaller;
  let general: string;

  beforeAll(async () => {
    t = await openTestHost();
    bot = await t.agent('bot', 'turn');
    alice = await t.person('alice');
    await t.manage('bot', 'alice'); // only its managers add an agent to a group
    general = (await createChannel(t.ctx, alice, { name: 'general', members: ['bot'] })).id;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [SLUICE_BIN, 'mcp', '--as', 'bot'],
      env: { ...(process.env as Record<string, string>), SLUICE_HOME: t.home, SLUICE_AS: '' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sluice-stdio-test', version: '0.0.0' });
    await client.connect(transport);
    mcp = callerFor(client, () => client.close());
  });
  afterAll(async () => {
    await mcp.close();
    await t.close();
  });

  it('walks the inbox in budgeted pages, each message exactly once and in order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 80; i++)
      ids.push(
        (await sendMessage(t.ctx, alice, { to: '#general', body: `${i} ${'é😀'.repeat(200 + i * 7)}` }))
          .message_id,
      );
    const pages = await walkPages(mcp, { limit: 100 });
    expect(pages.length).toBeGreaterThan(2);
    for (const page of pages) expect(page.text.length).toBeLessThanOrEqual(12_000);
    expect(pages.flatMap((p) => p.json.messages.map((m: { message_id: string }) => m.message_id))).toEqual(
      ids,
    );
    await mcp.call('message_archive', { message_ids: ids });
  });

  it('an oversized message yields readContent and fragments that rejoin to its projection', async () => {
    const big = (await sendMessage(t.ctx, alice, { to: '#general', body: `${'\u0000中😀"'.repeat(30_000)}` }))
      .message_id;
    const page = await mcp.call('channel_read');
    expect(page.json.readContent).toEqual({ channel_id: general, message_id: big });
    const { joined, results } = await readAllFragments(mcp, big);
    for (const r of results) expect(r.text.length).toBeLessThanOrEqual(12_000);
    expect(JSON.parse(joined)).toEqual(await readProjection(t.ctx, bot, big));
    expect(joined).toBe(projectionText(await readProjection(t.ctx, bot, big)));
    await mcp.call('message_archive', { message_ids: [big] });
  });

  it('a page that omits messages leaves them pending across processes', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await sendMessage(t.ctx, alice, { to: '#general', body: 'p'.repeat(2_000) })).message_id);
    const turn = await beginTurn(t.ctx, bot);
    const page = await mcp.call('channel_read', { limit: 20 });
    const got: string[] = page.json.messages.map((m: { message_id: string }) => m.message_id);
    expect(page.json.omitted).toBe(20 - got.length);
    // The child confirms the read once stdout took the reply, a moment after the client has it.
    await receiptCommitted(t.ctx, turn.id, got.length);
    const settled = await endTurn(t.ctx, bot, turn.id, { ok: true });
    expect(settled.handled).toEqual(got);
    expect(await pendingIds(t.ctx, bot.id)).toEqual(ids.slice(got.length));
    await mcp.call('message_archive', { message_ids: ids.slice(got.length) });
  });

  it('hostile channels stay within budget through the real process', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(hostileMessage, { minLength: 1, maxLength: 5 }), async (messages) => {
        run += 1;
        const channel = await createChannel(t.ctx, alice, { name: `stdio-hostile-${run}`, members: ['bot'] });
        const ids = await seedHostile(t.ctx, alice, channel.id, messages, `#${run}`);
        await sweepChannel(t.ctx, mcp, bot, channel.id, ids, 12_000, 'manager');
      }),
      { numRuns: 6 },
    );
  }, 240_000);

  it('refuses to start for a person, with one line and exit code 1', async () => {
    const child = spawn(process.execPath, [SLUICE_BIN, 'mcp', '--as', 'alice'], {
      env: { ...process.env, SLUICE_HOME: t.home, SLUICE_AS: '' },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^sluice: invalid_params: alice is a person/);
  });
});
