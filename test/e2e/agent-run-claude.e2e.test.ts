// Host-run agents end to end (docs/agents.md) with the REAL Claude Code against the scripted model
// server: `sluice agent run` registers a fresh agent, the running `sluice serve` starts its driver,
// a message sent to it gets the agent's reply, `agent ls` shows it running, `agent stop` stops the
// driver, and shutting the host down leaves no driver behind.
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/agent-run-claude.e2e.test.ts
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openHost } from '../../src/host/identity/home.js';
import { envelopesIn } from '../drivers/drive-harness.js';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';
import { ensureClients } from './support/clients.js';
import { isMainAgentRequest, type ModelServer, shellCall, startModelServer } from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';

const enabled = process.env.SLUICE_E2E === '1';

/** Polls `check` until it returns a value (the host and the driver are other processes). */
async function until<T>(check: () => Promise<T | undefined>, what: string, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!enabled)('sluice agent run (real Claude Code, supervised by sluice serve)', () => {
  let server: ModelServer;
  let claudeBin: string;
  let serve: ChildProcess | undefined;
  const { home, cleanup } = tempHome('sluice-agent-run-');
  const claudeHome = makeClaudeHome();

  beforeAll(async () => {
    claudeBin = (await ensureClients()).claude;
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    if (serve?.pid !== undefined && serve.exitCode === null) {
      try {
        process.kill(-serve.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await server?.close();
    cleanup();
    rmSync(claudeHome.root, { recursive: true, force: true });
  });

  test('agent run registers, serve starts it, a message gets the reply; stop and shutdown end the driver', async () => {
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      const envelope = envelopesIn(req).at(-1);
      const id = envelope && /"id":"([0-9A-Za-z]+)"/.exec(envelope)?.[1];
      const answered = JSON.stringify(req.body).includes('pong-from-bot');
      if (!id || answered) return { text: 'done' };
      return { toolCalls: [shellCall(req, `sluice message reply ${id} -m "pong-from-bot"`)] };
    });
    const env = claudeEnv(server, claudeHome, {
      env: { SLUICE_HOME: home, SLUICE_CLAUDE_BIN: claudeBin, SLUICE_AS: '' },
    });
    expect((await runCli(['init'], { home })).code).toBe(0);

    // The host, in its own process group (the test can kill everything it started).
    serve = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let banner = '';
    serve.stdout!.setEncoding('utf8').on('data', (d: string) => {
      banner += d;
    });
    const exited = new Promise<number | null>((resolve) => serve!.on('exit', (code) => resolve(code)));
    await until(async () => (banner.includes('Stop:') ? true : undefined), 'the banner', 60_000);
    expect(banner).toMatch(/^Agents: runs those registered with .* agent run NAME/m);

    const run = await runCli(
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
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('added agent bot (settles by turns)');
    expect(run.stdout).toMatch(/bot is (starting|running) \(pid \d+\)/);

    const ctx = await openHost({ home, durability: 'normal', pollMs: 20 });
    try {
      const sent = await runCli(['message', 'send', 'bot', '-m', 'ping'], { home });
      expect(sent.code, sent.stderr).toBe(0);
      const id = sent.stdout.trim();
      const reply = await until(
        () =>
          ctx.store.db
            .selectFrom('messages')
            .select(['body', 'reply_to'])
            .where('reply_to', '=', id)
            .executeTakeFirst(),
        "the agent's reply",
      );
      expect(reply.body).toBe('pong-from-bot');
      expect(server.scriptErrors).toEqual([]);

      const ls = await until(async () => {
        const out = await runCli(['agent', 'ls', '--json'], { home });
        const bot = (
          JSON.parse(out.stdout) as { name: string; run: { state: string; pid: number } | null }[]
        ).find((a) => a.name === 'bot');
        return bot?.run?.state === 'running' ? bot.run : undefined;
      }, 'running in agent ls');
      expect(alive(ls.pid)).toBe(true);
      const log = readFileSync(join(home, 'logs', 'agent-bot.log'), 'utf8');
      expect(log).toContain('[sluice] starting sluice drive claude --as bot');
      expect(log).toMatch(/bot ready/);

      const stop = await runCli(['agent', 'stop', 'bot'], { home });
      expect(stop.stdout).toBe('bot is stopped (sluice agent start bot starts it again)\n');
      await until(async () => (alive(ls.pid) ? undefined : true), 'the driver to exit', 30_000);

      const start = await runCli(['agent', 'start', 'bot'], { home });
      expect(start.stdout).toMatch(/bot is (starting|running) \(pid \d+\)/);
      const pid = Number(/pid (\d+)/.exec(start.stdout)?.[1]);
      expect(alive(pid)).toBe(true);

      // Host shutdown stops the driver, and the run waits for the next host.
      process.kill(serve.pid!, 'SIGTERM');
      expect(await exited).toBe(0);
      expect(alive(pid)).toBe(false);
      const after = JSON.parse((await runCli(['agent', 'ls', '--json'], { home })).stdout) as {
        name: string;
        run: { state: string } | null;
      }[];
      expect(after.find((a) => a.name === 'bot')?.run?.state).toBe('no-host');
      expect(existsSync(join(home, 'logs', 'agent-bot.log'))).toBe(true);

      // The next host starts it again; a host killed outright (SIGKILL, no cleanup) leaves no
      // driver running either: the driver sees its stdin from the host close and stops.
      serve = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
        env,
        detached: true,
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      const again = await until(async () => {
        const out = await runCli(['agent', 'ls', '--json'], { home });
        const bot = (
          JSON.parse(out.stdout) as { name: string; run: { state: string; pid: number } | null }[]
        ).find((a) => a.name === 'bot');
        return bot?.run?.state === 'running' ? bot.run.pid : undefined;
      }, 'running under the second host');
      expect(again).not.toBe(pid);
      process.kill(serve.pid!, 'SIGKILL');
      await until(async () => (alive(again) ? undefined : true), 'the orphaned driver to stop', 30_000);
    } finally {
      await ctx.store.close();
    }
  }, 300_000);
});
