// The newcomer's first hour (issue 23, "Done when"), in Debian's Chromium against a real `sluice
// serve` and the REAL Claude Code on the scripted model server: fresh home → sign in → New agent →
// the Connect panel shows the commands for this home → the "run it from the host" command, run as
// printed in the project folder → a message typed on the page gets the agent's reply, visible at the
// bottom of the timeline; the agent's queue page shows it running, and Stop / Start work from there.
//   npm run build && SLUICE_E2E=1 npx vitest run test/web/agent-connect.e2e.test.ts
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopesIn } from '../drivers/drive-harness.js';
import { ensureClients } from '../e2e/support/clients.js';
import {
  isMainAgentRequest,
  type ModelServer,
  shellCall,
  startModelServer,
} from '../e2e/support/model-server.js';
import { claudeEnv, makeClaudeHome } from '../e2e/support/run-claude.js';
import { runCli, runCommand, SLUICE_BIN, tempHome } from '../support/host.js';
import { collectProblems, launchChromium, POLL, signIn } from './browser-support.js';

const enabled = process.env.SLUICE_E2E === '1';

describe.skipIf(!enabled)('a newcomer connects an agent from the page and gets its reply', () => {
  let server: ModelServer;
  let serve: ChildProcess | undefined;
  let browser: Browser | undefined;
  let env: NodeJS.ProcessEnv;
  let loginLink = '';
  const { home, cleanup } = tempHome('sluice-web-connect-');
  const claudeHome = makeClaudeHome();

  beforeAll(async () => {
    const claudeBin = (await ensureClients()).claude;
    server = await startModelServer((req) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      const envelope = envelopesIn(req).at(-1);
      const id = envelope && /"id":"([0-9A-Za-z]+)"/.exec(envelope)?.[1];
      if (!id || JSON.stringify(req.body).includes('pong-from-helper')) return { text: 'done' };
      return { toolCalls: [shellCall(req, `sluice message reply ${id} -m "pong-from-helper"`)] };
    });
    env = claudeEnv(server, claudeHome, {
      env: { SLUICE_HOME: home, SLUICE_CLAUDE_BIN: claudeBin, SLUICE_AS: '', SLUICE_LOG_LEVEL: 'warn' },
    });
    expect((await runCli(['init'], { home })).code).toBe(0);
    serve = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    loginLink = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no login link: ${out}`)), 30_000);
      serve!.stdout!.on('data', (d: Buffer) => {
        out += d.toString('utf8');
        const link = /Login link: (\S+)/.exec(out)?.[1];
        if (link) {
          clearTimeout(timer);
          resolve(link);
        }
      });
    });
    browser = await launchChromium();
  }, 600_000);
  afterAll(async () => {
    await browser?.close();
    if (serve?.pid !== undefined && serve.exitCode === null) {
      serve.kill('SIGTERM');
      await new Promise((r) => serve!.once('exit', r));
    }
    await server?.close();
    cleanup();
    rmSync(claudeHome.root, { recursive: true, force: true });
  });

  it('New agent → Connect → run from the host → the reply at the bottom of the timeline; Stop and Start', async () => {
    const page = await browser!.newPage({ viewport: { width: 1280, height: 800 } });
    const problems: string[] = [];
    collectProblems(page, problems);
    await signIn(page, loginLink);

    await page.getByRole('button', { name: 'New message', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'New message' });
    await dialog.getByRole('button', { name: 'New agent…' }).click();
    await dialog.getByRole('textbox', { name: 'Agent name' }).fill('helper');
    await dialog.getByRole('button', { name: 'Add agent' }).click();

    const connect = dialog.getByTestId('connect-panel');
    await connect.getByRole('heading', { name: 'Connect' }).waitFor();
    const runLine = connect.locator('[data-command="run"] [data-testid="command"]');
    await runLine.waitFor();
    const command = (await runLine.textContent()) ?? '';
    // This home is not ~/.sluice, and no sluice is on the test's PATH: the command names both.
    expect(command).toContain(`--home ${home} agent run helper --driver claude --cwd .`);
    expect(await connect.locator('[data-command="hooks"] [data-testid="command"]').textContent()).toContain(
      'hooks install claude --as helper',
    );
    expect(await connect.locator('[data-command="mcp"] [data-testid="command"]').textContent()).toContain(
      'mcp --as helper',
    );
    await connect.getByRole('radio', { name: 'Codex' }).check();
    expect(await runLine.textContent()).toContain('agent run helper --driver codex --cwd .');
    await connect.getByRole('radio', { name: 'Claude Code' }).check();

    // The person runs the command as printed, in the project folder.
    const ran = await runCommand('/bin/sh', ['-c', `cd '${claudeHome.cwd}' && ${command}`], { env });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('helper now settles by turns');

    await dialog.getByRole('textbox', { name: 'Message' }).fill('ping from the page');
    await dialog.getByRole('button', { name: 'Send', exact: true }).click();
    await page.locator('article.message', { hasText: 'ping from the page' }).waitFor();
    const reply = page.locator('article.message', { hasText: 'pong-from-helper' });
    await reply.waitFor({ timeout: 120_000 });
    // The newest message is the last one, and it is on screen.
    expect(await page.locator('article.message').last().textContent()).toContain('pong-from-helper');
    await expect
      .poll(async () => {
        const box = await reply.boundingBox();
        return box !== null && box.y >= 0 && box.y + box.height <= 800;
      }, POLL)
      .toBe(true);
    expect(server.scriptErrors).toEqual([]);

    // The queue page: running, with Stop; Stop, then Start.
    await page.getByRole('navigation').getByRole('link', { name: 'helper', exact: true }).click();
    const state = page.getByTestId('run-state');
    await expect.poll(() => state.textContent(), { ...POLL, timeout: 30_000 }).toBe('running');
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await expect.poll(() => state.textContent(), { ...POLL, timeout: 30_000 }).toBe('stopped');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await expect.poll(() => state.textContent(), { ...POLL, timeout: 60_000 }).toBe('running');
    expect(problems).toEqual([]);
  }, 300_000);
});
