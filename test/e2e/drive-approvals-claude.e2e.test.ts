// Durable approvals with the REAL Claude Code client (docs/approvals.md): the driven session's
// allow-list leaves `touch …` out, so Claude asks through `--permission-prompt-tool stdio`; the
// test decides through the CLI and RPC, lets one time out, and kills a driver while it waits. The
// last test is the "done when": with the driver's tight allow-list the agent still finishes
// work that needs one approved command, and replies.
// Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-approvals-claude.e2e.test.ts
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
  isMainAgentRequest,
  type ModelServer,
  priorToolCallCount,
  shellCall,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';

const enabled = process.env.SLUICE_E2E === '1';

describe.skipIf(!enabled)('approvals with a driven Claude Code', () => {
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
    const claudeHome = makeClaudeHome();
    cleanups.push(() => rmSync(claudeHome.root, { recursive: true, force: true }));
    const env = claudeEnv(server, claudeHome, { env: { SLUICE_HOME: h.home, SLUICE_CLAUDE_BIN: claudeBin } });
    cleanups.push(() => h.close());
    const start = () => {
      const d = startDriver(
        'claude',
        ['--as', h.agent.name, '--cwd', claudeHome.cwd, '--', '--no-session-persistence'],
        env,
      );
      cleanups.push(() => d.stop());
      return d;
    };
    return { h, cwd: claudeHome.cwd, start };
  }

  const approvalRows = (h: DriveHome) =>
    h.ctx.store.db.selectFrom('approvals').selectAll().where('agent_id', '=', h.agent.id).execute();
  const askedId = async (d: DriverProcess) =>
    /asks (apr_\w+)/.exec(await d.waitForOutput(/ asks apr_/, 120_000))?.[1] ?? '';
  /** The tool results the model received after its shell call. */
  const resultsSeen = () =>
    server.requests.filter(isMainAgentRequest).flatMap((r) => toolResults(r).map((t) => t.text));

  test('allowed through the CLI: the command runs once, and the request is applied once', async () => {
    scriptTouch('allowed-marker');
    const { h, cwd, start } = await setup();
    await h.send('please touch the marker');
    const d = start();
    const id = await askedId(d);
    const rows = await approvalRows(h);
    expect(rows).toHaveLength(1);
    expect(JSON.parse(rows[0]?.subject ?? '{}')).toMatchObject({
      tool: 'Bash',
      input: { command: 'touch allowed-marker' },
    });
    const allowed = await runCli(['approval', 'allow', id], { home: h.home });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain(`${id} allowed by owner`);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'allowed-marker'))).toBe(true);
    const after = await approvalRows(h);
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ status: 'allowed' });
    expect(after[0]?.applied_at).not.toBeNull();
    // A second decision is refused and changes nothing.
    const again = await runCli(['approval', 'deny', id], { home: h.home });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/conflict|already allowed/);
  }, 300_000);

  test('denied over RPC with a note: the command does not run and the model reads the note', async () => {
    scriptTouch('denied-marker');
    const { h, cwd, start } = await setup();
    await h.send('please touch the marker');
    const d = start();
    const id = await askedId(d);
    const reply = JSON.parse(
      (await handleRpcText(
        { ctx: h.ctx, principal: h.owner, limits: DEFAULT_RPC_LIMITS },
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'approval.decide',
          params: { id, decision: 'deny', note: 'not on Fridays, use the staging box' },
        }),
      )) ?? 'null',
    );
    expect(reply.result.approval).toMatchObject({ id, status: 'denied', decidedBy: 'owner' });
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'denied-marker'))).toBe(false);
    expect(resultsSeen()).toContain('not on Fridays, use the staging box');
  }, 300_000);

  test('nobody decides: the timeout denies, and the model reads why', async () => {
    scriptTouch('timeout-marker');
    const { h, cwd, start } = await setup();
    await setApprovalPolicy(h.ctx, h.owner, h.agent.name, { timeoutMs: 3000 });
    await h.send('please touch the marker');
    const d = start();
    const id = await askedId(d);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'timeout-marker'))).toBe(false);
    expect((await approvalRows(h))[0]).toMatchObject({ id, status: 'expired' });
    expect(resultsSeen().some((t) => t.includes('No person decided this request'))).toBe(true);
  }, 300_000);

  test('a driver killed while it waits: the decision given meanwhile is honoured after the restart, with no second request', async () => {
    scriptTouch('restart-marker');
    const { h, cwd, start } = await setup();
    await h.send('please touch the marker');
    const first = start();
    const id = await askedId(first);
    first.killTree();
    await first.exited;
    const allowed = await runCli(['approval', 'allow', id, '--note', 'fine'], { home: h.home });
    expect(allowed.code, allowed.stderr).toBe(0);
    const second = start();
    await second.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'restart-marker'))).toBe(true);
    const rows = await approvalRows(h);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id, status: 'allowed' });
    expect(rows[0]?.applied_at).not.toBeNull();
    expect(second.stdout()).not.toMatch(/ asks apr_/);
  }, 300_000);

  test('a driver stopped (SIGTERM) while it waits: the client cannot finish the turn, the message and the request stay pending for the next driver', async () => {
    // The model would reply and archive as soon as its `touch` gets any answer, even a failure:
    // a client left running after the stop would consume the message unsupervised.
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'ok' };
      const id = envelopeIds(envelopesIn(req).at(-1) ?? '')[0];
      const step = priorToolCallCount(req);
      if (step === 0) return { toolCalls: [shellCall(req, 'touch stopped-marker')] };
      if (step === 1 && id)
        return {
          toolCalls: [
            {
              name: 'mcp__sluice__message_reply',
              input: { message_id: id, body: 'went on alone', archive: true },
            },
          ],
        };
      return { text: 'done' };
    });
    const { h, cwd, start } = await setup();
    const sent = await h.send('please touch the marker and tell me');
    const d = start();
    const id = await askedId(d);
    // As `sluice agent stop` and a host shutdown do: SIGTERM to the driver alone, not its group.
    d.child.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    expect(d.stdout()).toMatch(/abandoned: 1 delivered/);
    const replies = await h.ctx.store.db
      .selectFrom('messages')
      .select(['body'])
      .where('reply_to', '=', sent)
      .execute();
    expect(replies, resultsSeen().join('\n')).toEqual([]);
    expect(await h.states()).toEqual([{ id: sent, state: 'waiting', failure_kind: null }]);
    expect(await approvalRows(h)).toMatchObject([{ id, status: 'pending' }]);
    expect(existsSync(join(cwd, 'stopped-marker'))).toBe(false);
    // Nothing answered the model's command after the stop: it made no further call.
    expect(resultsSeen()).toEqual([]);
    // The decision given meanwhile is the next driver's: the command runs, then the agent replies.
    expect((await runCli(['approval', 'allow', id], { home: h.home })).code).toBe(0);
    const second = start();
    await second.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'stopped-marker'))).toBe(true);
    expect(second.stdout()).not.toMatch(/ asks apr_/);
    expect(await h.states()).toEqual([{ id: sent, state: 'archived', failure_kind: null }]);
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
    expect(reply, resultsSeen().join('\n')).toEqual({
      body: 'release-notes.md is there',
      author_id: h.agent.id,
    });
    // Only the command was asked: the sluice tools are on the allow-list.
    expect(await approvalRows(h)).toHaveLength(1);
    expect((await h.states()).map((s) => s.state)).toEqual(['archived']);
  }, 300_000);
});
