// Host-run agents that cannot work, with the REAL clients under a real `sluice serve` (docs/agents.md):
// - Claude Code that exits at once (an unknown option after `--`): `agent run` prints the crash
//   line and exits 1 — before the fix it said "helper is starting (pid …)" and exited 0 — and
//   `agent ls` shows it not running with that line;
// - Claude Code whose model fails (HTTP 529): `agent ls` shows the model error beside "running"
//   until a turn succeeds;
// - Codex pointed at a port nobody listens on: it retries without end and the driver keeps running;
//   `agent ls` shows `modelError` ("Reconnecting…") while `lastError` stays null — before the fix
//   it showed a plain "running".
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/agent-run-failures.e2e.test.ts
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';
import { launchChromium, POLL, signIn } from '../web/browser-support.js';
import { ensureClients } from './support/clients.js';
import { isMainAgentRequest, startModelServer } from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

interface LsRun {
  state: string;
  lastError: string | null;
  modelError: string | null;
}

/** Polls `check` until it returns a value (the host and the driver are other processes). */
async function until<T>(check: () => Promise<T | undefined>, what: string, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A loopback port that refuses connections: bound on port 0, then closed again. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe.skipIf(!enabled)('host-run agents that cannot work (real clients, sluice serve)', () => {
  let bins: { claude: string; codex: string };
  const cleanups: (() => Promise<void> | void)[] = [];
  beforeAll(async () => {
    bins = await ensureClients();
  }, 600_000);
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A fresh home with `sluice serve` running in it with `env`; stopped after the test. */
  async function serveIn(env: NodeJS.ProcessEnv): Promise<{ home: string; loginLink: string }> {
    const { home, cleanup } = tempHome('sluice-run-failures-');
    cleanups.push(cleanup);
    expect((await runCli(['init'], { home })).code).toBe(0);
    const serve: ChildProcess = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env: { ...env, SLUICE_HOME: home, SLUICE_AS: '' },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<void>((resolve) => serve.on('exit', () => resolve()));
    cleanups.push(async () => {
      if (serve.exitCode === null) process.kill(serve.pid!, 'SIGTERM');
      await exited;
    });
    let banner = '';
    serve.stdout!.setEncoding('utf8').on('data', (d: string) => {
      banner += d;
    });
    await until(async () => (banner.includes('Stop:') ? true : undefined), 'the banner', 60_000);
    return { home, loginLink: /Login link: (\S+)/.exec(banner)?.[1] ?? '' };
  }

  const runOf = async (home: string, agent: string): Promise<LsRun> => {
    const ls = await runCli(['agent', 'ls', '--json'], { home });
    return (JSON.parse(ls.stdout) as { name: string; run: LsRun }[]).find((a) => a.name === agent)!.run;
  };

  test('Claude Code that exits at once is a crash; a model that fails shows beside running until a turn succeeds', async () => {
    let failing = true;
    const server = await startModelServer((req) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      return failing ? { error: { status: 529, message: 'Overloaded' } } : { text: 'done' };
    });
    cleanups.push(() => server.close());
    const claudeHome = makeClaudeHome();
    cleanups.push(() => rmSync(claudeHome.root, { recursive: true, force: true }));
    const { home } = await serveIn(
      claudeEnv(server, claudeHome, { env: { SLUICE_CLAUDE_BIN: bins.claude } }),
    );

    const broken = await runCli(
      ['agent', 'run', 'broken', '--driver', 'claude', '--cwd', claudeHome.cwd, '--', '--bogus-flag'],
      { home },
    );
    expect(broken.stdout).toContain('added agent broken (settles by turns)');
    expect(broken.stdout).not.toMatch(/is (starting|running)/);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(
      /^sluice: unavailable: broken crashed: sluice: unavailable: claude exited \(code 1\): error: unknown option '--bogus-flag'; the host restarts it/,
    );
    expect(broken.stderr.trimEnd().split('\n')).toHaveLength(1);
    const crashed = await runOf(home, 'broken');
    expect(crashed.state).not.toBe('running');
    expect(crashed.lastError).toMatch(/unknown option '--bogus-flag'/);
    expect((await runCli(['agent', 'stop', 'broken'], { home })).code).toBe(0);

    const good = await runCli(
      [
        'agent',
        'run',
        'bot',
        '--driver',
        'claude',
        '--cwd',
        claudeHome.cwd,
        '--',
        '--no-session-persistence',
      ],
      { home },
    );
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toMatch(/^bot is running \(pid \d+\); log: /m);
    const id = (await runCli(['message', 'send', 'bot', '-m', 'ping'], { home })).stdout.trim();
    const failed = await until(async () => {
      const run = await runOf(home, 'bot');
      return run.modelError ? run : undefined;
    }, 'the model error in agent ls');
    expect(failed).toMatchObject({ state: 'running', lastError: null });
    expect(failed.modelError).toMatch(/Overloaded|529/);
    expect((await runCli(['agent', 'ls'], { home })).stdout).toMatch(
      /^bot\s+turn\s+claude: running; model error: /m,
    );

    failing = false;
    expect((await runCli(['queue', 'resume', 'bot', id], { home })).code).toBe(0);
    await until(async () => ((await runOf(home, 'bot')).modelError === null ? true : undefined), 'cleared');
    expect(await runOf(home, 'bot')).toMatchObject({ state: 'running', modelError: null });
  }, 300_000);

  test('Codex that cannot reach its model: modelError while the driver keeps running, lastError untouched', async () => {
    const codexHome = makeCodexHome({ server: `http://127.0.0.1:${await deadPort()}/v1` });
    cleanups.push(() => rmSync(codexHome.root, { recursive: true, force: true }));
    const { home, loginLink } = await serveIn(codexEnv(codexHome, { SLUICE_CODEX_BIN: bins.codex }));

    const run = await runCli(['agent', 'run', 'cx', '--driver', 'codex', '--cwd', codexHome.cwd], { home });
    expect(run.code, run.stderr).toBe(0);
    // A cold Codex start (its MCP server, the first thread) may outlast the command's wait: then it
    // says so, and agent ls shows it running once it is.
    expect(run.stdout).toMatch(/^cx is (running|still starting after 15 s) \(pid \d+\)/m);
    expect((await runCli(['message', 'send', 'cx', '-m', 'anyone there?'], { home })).code).toBe(0);
    const shown = await until(async () => {
      const r = await runOf(home, 'cx');
      return r.modelError ? r : undefined;
    }, 'the model error in agent ls');
    expect(shown).toMatchObject({ state: 'running', lastError: null });
    expect(shown.modelError).toMatch(/Reconnecting|Connection failed|error sending request/);
    expect((await runCli(['agent', 'ls'], { home })).stdout).toMatch(
      /^cx\s+turn\s+codex: running; model error: /m,
    );

    // The page's run panel on the agent's queue page says the same.
    const browser = await launchChromium();
    cleanups.push(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, loginLink);
    await page.getByRole('navigation').getByRole('link', { name: 'cx', exact: true }).click();
    await expect
      .poll(() => page.getByTestId('run-state').textContent(), { ...POLL, timeout: 30_000 })
      .toBe('running');
    const note = page.getByTestId('run-model-error');
    await note.waitFor({ timeout: 30_000 });
    expect(await note.textContent()).toMatch(
      /^It cannot reach its model: .*(Reconnecting|Connection failed)/,
    );
  }, 300_000);
});
