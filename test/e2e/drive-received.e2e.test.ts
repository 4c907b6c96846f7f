// Received means received in a driven session (DESIGN.md I9), with the REAL Claude Code and Codex
// clients against the scripted model server. A `channel_read` result counts for the turn only when
// the client's own output stream (Claude stream-json, Codex item events) shows the model got that
// exact text. Opt-in:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-received.e2e.test.ts
import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { type DriveHome, envelopesIn, openDriveHome, startDriver } from '../drivers/drive-harness.js';
import { ensureClients } from './support/clients.js';
import {
  isMainAgentRequest,
  type ModelServer,
  type RecordedRequest,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

/** The model walks the oversized head's fragments with `channel_read`, then stops. */
function walkFragments(req: RecordedRequest) {
  const id = /sluice message read ([0-9A-Za-z]+)/.exec(envelopesIn(req).at(-1) ?? '')?.[1];
  if (!id) throw new Error('no oversized head in the delivery');
  const last = toolResults(req).at(-1);
  if (last === undefined)
    return { toolCalls: [{ name: 'mcp__sluice__channel_read', input: { message_id: id } }] };
  const cursor = /"contentCursor":"([^"]+)"/.exec(last.text)?.[1];
  if (!cursor) return { text: 'done' };
  return {
    toolCalls: [{ name: 'mcp__sluice__channel_read', input: { message_id: id, content_cursor: cursor } }],
  };
}

// Over the 16 KiB envelope cap: only its locator is delivered, the body is read in fragments.
const OVERSIZED = `head ${'words 本文 '.repeat(1400)} tail`;

describe.skipIf(!enabled)('sluice drive claude: only results Claude showed the model count', () => {
  let server: ModelServer;
  let claudeBin: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    claudeBin = (await ensureClients()).claude;
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A driven agent whose oversized head the model reads through `channel_read` fragments. */
  async function readOversizedHead(extraEnv: Record<string, string>): Promise<{ h: DriveHome; id: string }> {
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      const id = /sluice message read ([0-9A-Za-z]+)/.exec(envelopesIn(req).at(-1) ?? '')?.[1];
      if (!id) throw new Error('no oversized head in the delivery');
      const last = toolResults(req).at(-1);
      if (last === undefined)
        return { toolCalls: [{ name: 'mcp__sluice__channel_read', input: { message_id: id } }] };
      const cursor = /"contentCursor":"([^"]+)"/.exec(last.text)?.[1];
      if (!cursor) return { text: 'done' };
      return {
        toolCalls: [{ name: 'mcp__sluice__channel_read', input: { message_id: id, content_cursor: cursor } }],
      };
    });
    const h = await openDriveHome();
    cleanups.push(() => h.close());
    const claudeHome = makeClaudeHome();
    cleanups.push(() => rmSync(claudeHome.root, { recursive: true, force: true }));
    const env = claudeEnv(server, claudeHome, {
      env: { SLUICE_HOME: h.home, SLUICE_CLAUDE_BIN: claudeBin, ...extraEnv },
    });
    const id = await h.send(OVERSIZED);
    const d = startDriver(
      'claude',
      ['--as', h.agent.name, '--cwd', claudeHome.cwd, '--', '--no-session-persistence'],
      env,
    );
    cleanups.push(() => d.stop());
    await d.waitForOutput(/ ok: 0 delivered/, 120_000);
    expect(server.scriptErrors).toEqual([]);
    return { h, id };
  }

  const lastResult = () =>
    server.requests
      .filter(isMainAgentRequest)
      .flatMap((r) => toolResults(r))
      .at(-1)?.text ?? '';

  test('a result Claude handed to the model whole is handled by the successful turn', async () => {
    const { h, id } = await readOversizedHead({});
    expect(JSON.parse(lastResult())).toMatchObject({ message_id: id, complete: true });
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);
  }, 240_000);

  test('a result Claude replaced (over its MCP output cap) leaves the message pending after the successful turn', async () => {
    // Claude Code keeps results over MAX_MCP_OUTPUT_TOKENS from the model: it gets a note instead.
    const { h, id } = await readOversizedHead({ MAX_MCP_OUTPUT_TOKENS: '100' });
    expect(lastResult()).not.toContain('"fragment"');
    expect(lastResult().length).toBeGreaterThan(0);
    expect(await h.states()).toEqual([{ id, state: 'waiting', failure_kind: null }]);
    const turns = await h.ctx.store.db.selectFrom('turns').select(['state', 'receipt']).execute();
    expect(turns).toEqual([{ state: 'succeeded', receipt: 'seen' }]);
  }, 240_000);
});

describe.skipIf(!enabled)('sluice drive codex: only results Codex reported to the model count', () => {
  let server: ModelServer;
  let codexBin: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    codexBin = (await ensureClients()).codex;
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  test('fragments Codex reported as completed sluice tool calls are handled by the successful turn', async () => {
    server.reset((req) => walkFragments(req));
    const h = await openDriveHome();
    cleanups.push(() => h.close());
    const codexHome = makeCodexHome({ server });
    cleanups.push(() => rmSync(codexHome.root, { recursive: true, force: true }));
    const env = codexEnv(codexHome, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: codexBin });
    const id = await h.send(OVERSIZED);
    const d = startDriver('codex', ['--as', h.agent.name, '--cwd', codexHome.cwd], env);
    cleanups.push(() => d.stop());
    await d.waitForOutput(/ ok: 0 delivered/, 120_000);
    expect(server.scriptErrors).toEqual([]);
    const results = server.mainCalls().flatMap((r) => toolResults(r));
    expect(results.length).toBeGreaterThan(1);
    // Codex puts a header ("Wall time: …") before the tool's text when it shows it to the model.
    const last = results.at(-1)?.text ?? '';
    expect(JSON.parse(last.slice(last.indexOf('{')))).toMatchObject({ message_id: id, complete: true });
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);
    const turns = await h.ctx.store.db.selectFrom('turns').select(['state', 'receipt']).execute();
    expect(turns).toEqual([{ state: 'succeeded', receipt: 'seen' }]);
  }, 240_000);
});
