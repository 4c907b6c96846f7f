// Durable approvals with the REAL Codex app-server (docs/approvals.md): driven with
// `--approval-policy untrusted` (the tight allow-list), Codex asks before `touch …`
// (`item/commandExecution/requestApproval`); the test decides through the CLI and RPC, lets one
// time out, and kills a driver while it waits. A decline carries no text to a Codex model, so the
// note must reach it as a steer. The last test is the "done when": with that tight
// allow-list the agent still finishes work that needs one approved command, and replies.
// Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-approvals-codex.e2e.test.ts
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { setApprovalPolicy } from '../../src/host/approvals/policy.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS } from '../../src/surfaces/rpc/methods.js';
import {
  type DriveHome,
  type DriverProcess,
  envelopeIds,
  envelopesIn,
  openDriveHome,
  startDriver,
} from '../drivers/drive-harness.js';
import { runCli } from '../support/host.js';
import { ensureClients } from './support/clients.js';
import {
  findText,
  isMainAgentRequest,
  type ModelServer,
  priorToolCallCount,
  shellCall,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

describe.skipIf(!enabled)('approvals with a driven Codex', () => {
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

  /** The model asks to run `touch <marker>` once, then answers in text. */
  function scriptTouch(marker: string): void {
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'ok' };
      return priorToolCallCount(req) === 0
        ? { toolCalls: [shellCall(req, `touch ${marker}`)] }
        : { text: 'done' };
    });
  }

  async function setup(): Promise<{ h: DriveHome; cwd: string; start: () => DriverProcess }> {
    const h = await openDriveHome();
    const codexHome = makeCodexHome({ server });
    cleanups.push(() => rmSync(codexHome.root, { recursive: true, force: true }));
    const env = codexEnv(codexHome, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: codexBin });
    cleanups.push(() => h.close());
    const start = () => {
      const d = startDriver(
        'codex',
        ['--as', h.agent.name, '--cwd', codexHome.cwd, '--approval-policy', 'untrusted'],
        env,
      );
      cleanups.push(() => d.stop());
      return d;
    };
    return { h, cwd: codexHome.cwd, start };
  }

  const approvalRows = (h: DriveHome) =>
    h.ctx.store.db.selectFrom('approvals').selectAll().where('agent_id', '=', h.agent.id).execute();
  const askedId = async (d: DriverProcess) =>
    /asks (apr_\w+)/.exec(await d.waitForOutput(/ asks apr_/, 120_000))?.[1] ?? '';
  /** Whether a model request after the shell call carried `text` (the steered note). */
  const modelSaw = (text: string) =>
    server.requests.filter(isMainAgentRequest).some((r) => findText(r, text).length > 0);

  test('allowed through the CLI: the command runs once', async () => {
    scriptTouch('allowed-marker');
    const { h, cwd, start } = await setup();
    await h.send('please touch the marker');
    const d = start();
    const id = await askedId(d);
    const [row] = await approvalRows(h);
    expect(row).toMatchObject({ client: 'codex', kind: 'command', status: 'pending' });
    expect(JSON.parse(row?.subject ?? '{}').command).toContain('touch allowed-marker');
    const allowed = await runCli(['approval', 'allow', id], { home: h.home });
    expect(allowed.code, allowed.stderr).toBe(0);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'allowed-marker'))).toBe(true);
    const after = await approvalRows(h);
    expect(after).toHaveLength(1);
    expect(after[0]?.applied_at).not.toBeNull();
  }, 300_000);

  test('denied over RPC with a note: the command does not run and the note reaches the model', async () => {
    scriptTouch('denied-marker');
    const { h, cwd, start } = await setup();
    await h.send('please touch the marker');
    const d = start();
    const id = await askedId(d);
    const note = 'not today, the release is frozen';
    const reply = JSON.parse(
      (await handleRpcText(
        { ctx: h.ctx, principal: h.owner, limits: DEFAULT_RPC_LIMITS },
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'approval.decide',
          params: { id, decision: 'deny', note },
        }),
      )) ?? 'null',
    );
    expect(reply.result.approval).toMatchObject({ id, status: 'denied' });
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'denied-marker'))).toBe(false);
    expect(modelSaw(note)).toBe(true);
  }, 300_000);

  test('nobody decides: the timeout denies and the model is told why', async () => {
    scriptTouch('timeout-marker');
    const { h, cwd, start } = await setup();
    await setApprovalPolicy(h.ctx, h.owner, h.agent.name, { timeoutMs: 3000 });
    await h.send('please touch the marker');
    const d = start();
    const id = await askedId(d);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'timeout-marker'))).toBe(false);
    expect((await approvalRows(h))[0]).toMatchObject({ id, status: 'expired' });
    expect(modelSaw('No person decided this request')).toBe(true);
  }, 300_000);

  test('a driver killed while it waits: the decision given meanwhile is honoured after the restart, with no second request', async () => {
    scriptTouch('restart-marker');
    const { h, cwd, start } = await setup();
    await h.send('please touch the marker');
    const first = start();
    const id = await askedId(first);
    first.killTree();
    await first.exited;
    const allowed = await runCli(['approval', 'allow', id], { home: h.home });
    expect(allowed.code, allowed.stderr).toBe(0);
    const second = start();
    await second.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'restart-marker'))).toBe(true);
    const rows = await approvalRows(h);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id, status: 'allowed' });
    expect(rows[0]?.applied_at).not.toBeNull();
    // The retried turn's ask found the decision: nobody was asked again.
    expect(second.stdout()).not.toMatch(/ asks apr_/);
    expect(second.stdout()).toContain(`${id} allow (person)`);
  }, 300_000);

  test('a tight allow-list still finishes work that needs one approved command: it runs, then the agent replies', async () => {
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'ok' };
      const id = envelopeIds(envelopesIn(req).at(-1) ?? '')[0];
      const step = priorToolCallCount(req);
      if (step === 0) return { toolCalls: [shellCall(req, 'touch release-notes.md')] };
      if (step === 1 && id)
        return {
          toolCalls: [
            {
              name: 'mcp__sluice__message_reply',
              input: { message_id: id, body: 'release-notes.md is there', archive: true },
            },
          ],
        };
      return { text: 'done' };
    });
    const { h, cwd, start } = await setup();
    const sent = await h.send('please write the release notes file and tell me');
    const d = start();
    const id = await askedId(d);
    expect((await runCli(['approval', 'allow', id], { home: h.home })).code).toBe(0);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'release-notes.md'))).toBe(true);
    const reply = await h.ctx.store.db
      .selectFrom('messages')
      .select(['body', 'author_id'])
      .where('reply_to', '=', sent)
      .executeTakeFirst();
    const seen = server.requests.filter(isMainAgentRequest).flatMap((r) => toolResults(r).map((t) => t.text));
    expect(reply, seen.join('\n')).toEqual({ body: 'release-notes.md is there', author_id: h.agent.id });
    expect(await approvalRows(h)).toHaveLength(1);
    expect((await h.states()).map((s) => s.state)).toEqual(['archived']);
  }, 300_000);
});
