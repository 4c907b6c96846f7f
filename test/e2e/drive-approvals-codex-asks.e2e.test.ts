// Durable approvals for the rest of what the REAL Codex app-server asks (docs/approvals.md):
// - a file change: under `--approval-policy untrusted` the model's `apply_patch` (through its
//   shell, as Codex 0.171 offers it) becomes `item/fileChange/requestApproval`; allow → the file
//   is written once, deny → it is not and the model reads the note (steered);
// - a question: with Codex's `default_mode_request_user_input` feature on (otherwise Codex offers
//   `request_user_input` only in Plan mode), the model's `request_user_input` becomes
//   `item/tool/requestUserInput`; the person's answer text reaches the model as the answer, and a
//   timeout leaves it unanswered with the timeout's note.
// Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-approvals-codex-asks.e2e.test.ts
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { setApprovalPolicy } from '../../src/host/approvals/policy.js';
import { type DriveHome, type DriverProcess, openDriveHome, startDriver } from '../drivers/drive-harness.js';
import { runCli } from '../support/host.js';
import { ensureClients } from './support/clients.js';
import {
  findText,
  isMainAgentRequest,
  type ModelServer,
  priorToolCallCount,
  shellCall,
  startModelServer,
  type ToolCall,
  toolResults,
} from './support/model-server.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

const PATCH = [
  "apply_patch <<'EOF'",
  '*** Begin Patch',
  '*** Add File: notes.txt',
  '+written once',
  '*** End Patch',
  'EOF',
  '',
].join('\n');

const QUESTIONS = [
  {
    id: 'colour',
    header: 'Colour',
    question: 'Which colour should the banner be?',
    options: [
      { label: 'Red', description: 'warm' },
      { label: 'Blue', description: 'cool' },
    ],
  },
];

describe.skipIf(!enabled)('approvals for file changes and questions with a driven Codex', () => {
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

  /** The model makes one tool call, then answers in text. */
  function scriptOnce(call: (req: Parameters<typeof shellCall>[0]) => ToolCall): void {
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'ok' };
      return priorToolCallCount(req) === 0 ? { toolCalls: [call(req)] } : { text: 'done' };
    });
  }

  async function setup(extraToml = ''): Promise<{ h: DriveHome; cwd: string; start: () => DriverProcess }> {
    const h = await openDriveHome();
    const codexHome = makeCodexHome({ server, extraToml });
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
  const mainRequests = () => server.requests.filter(isMainAgentRequest);
  const modelSaw = (text: string) => mainRequests().some((r) => findText(r, text).length > 0);
  const resultsSeen = () => mainRequests().flatMap((r) => toolResults(r).map((t) => t.text));

  test('a file change allowed through the CLI: the file is written once, with the diff shown', async () => {
    scriptOnce((req) => shellCall(req, PATCH));
    const { h, cwd, start } = await setup();
    await h.send('please write the notes');
    const d = start();
    const id = await askedId(d);
    const [row] = await approvalRows(h);
    expect(row).toMatchObject({ id, client: 'codex', kind: 'file_change', status: 'pending' });
    expect(JSON.parse(row?.subject ?? '{}').diff).toMatch(/notes\.txt[\s\S]*written once/);
    expect(existsSync(join(cwd, 'notes.txt'))).toBe(false);
    const allowed = await runCli(['approval', 'allow', id], { home: h.home });
    expect(allowed.code, allowed.stderr).toBe(0);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('written once\n');
    const after = await approvalRows(h);
    expect(after).toHaveLength(1);
    expect(after[0]?.applied_at).not.toBeNull();
    // A file change is never allowed always.
    expect(
      (await runCli(['approval', 'rules', h.agent.name, '--json'], { home: h.home })).stdout.trim(),
    ).toBe('[]');
  }, 300_000);

  test('a file change denied with a note: nothing is written and the model reads the note', async () => {
    scriptOnce((req) => shellCall(req, PATCH));
    const { h, cwd, start } = await setup();
    await h.send('please write the notes');
    const d = start();
    const id = await askedId(d);
    const note = 'notes go in the wiki, not the repo';
    const denied = await runCli(['approval', 'deny', id, '--note', note], { home: h.home });
    expect(denied.code, denied.stderr).toBe(0);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(existsSync(join(cwd, 'notes.txt'))).toBe(false);
    expect(modelSaw(note)).toBe(true);
  }, 300_000);

  const FEATURE = '[features]\ndefault_mode_request_user_input = true';
  const askQuestions = () =>
    scriptOnce(() => ({ name: 'request_user_input', input: { questions: QUESTIONS } }));

  test('a question answered with `sluice approval answer`: the model reads the answer', async () => {
    askQuestions();
    const { h, start } = await setup(FEATURE);
    await h.send('design the banner');
    const d = start();
    const id = await askedId(d);
    const [row] = await approvalRows(h);
    expect(row).toMatchObject({ id, kind: 'user_input', status: 'pending' });
    // The questions exactly as Codex sent them (it adds isOther and isSecret).
    expect(JSON.parse(row?.subject ?? '{}').questions).toEqual([
      { ...QUESTIONS[0], isOther: true, isSecret: false },
    ]);
    const listed = await runCli(['approval', 'ls'], { home: h.home });
    expect(listed.stdout).toContain('Which colour should the banner be?');
    // Allowing a question without an answer is refused; the answer verb gives one.
    const bare = await runCli(['approval', 'allow', id], { home: h.home });
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(/invalid_params|answer it with text/);
    const answered = await runCli(['approval', 'answer', id, 'Blue, with white letters'], { home: h.home });
    expect(answered.code, answered.stderr).toBe(0);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(resultsSeen().some((t) => t.includes('Blue, with white letters'))).toBe(true);
    expect((await approvalRows(h))[0]).toMatchObject({ status: 'allowed', note: 'Blue, with white letters' });
  }, 300_000);

  test('a question nobody answers: the timeout leaves it unanswered and the model is told why', async () => {
    askQuestions();
    const { h, start } = await setup(FEATURE);
    await setApprovalPolicy(h.ctx, h.owner, h.agent.name, { timeoutMs: 3000 });
    await h.send('design the banner');
    const d = start();
    const id = await askedId(d);
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect((await approvalRows(h))[0]).toMatchObject({ id, status: 'expired' });
    expect(resultsSeen()).toContain('{"answers":{}}');
    expect(modelSaw('No person decided this request')).toBe(true);
  }, 300_000);
});
