import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
}

/** Spawns `sluice serve --port 0 …` and resolves once `marker` has appeared on `stream`. */
function serve(home: string, args: string[], stream: 'stdout' | 'stderr', marker: RegExp): Promise<Run> {
  const child = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0', ...args], {
    env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '', SLUICE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const text = { stdout: '', stderr: '' };
  child.stdout?.on('data', (d: Buffer) => {
    text.stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    text.stderr += d.toString();
  });
  const run: Run = { child, stdout: () => text.stdout, stderr: () => text.stderr };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no ${marker} on ${stream}: ${JSON.stringify(text)}`)),
      30_000,
    );
    const check = () => {
      if (marker.test(text[stream])) {
        clearTimeout(timer);
        resolve(run);
      }
    };
    child[stream]?.on('data', check);
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${JSON.stringify(text)}`)));
  });
}

async function stop(run: Run): Promise<void> {
  if (run.child.exitCode !== null) return;
  const exited = new Promise((r) => run.child.once('exit', r));
  run.child.kill('SIGTERM');
  await exited;
}

describe('sluice serve speaks to a person on stdout and logs JSON elsewhere', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('prints a short banner (address, login link, log file, how to stop) and writes request logs to a private file', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const run = await serve(home, [], 'stdout', /Stop: .*\n/);
    cleanups.push(() => stop(run));
    const lines = run.stdout().trimEnd().split('\n');
    const origin = /^Sluice is serving (http:\/\/127\.0\.0\.1:\d+) /.exec(lines[0] ?? '')?.[1];
    expect(origin, lines.join('\n')).toBeDefined();
    expect(lines.some((l) => l.startsWith(`Login link: ${origin}/login?code=`))).toBe(true);
    const logPath = join(home, 'logs', 'serve.log');
    expect(lines).toContain(`Logs: ${logPath}`);
    expect(lines.at(-1)).toMatch(/^Stop: press Ctrl\+C/);
    expect(lines.length).toBeLessThanOrEqual(6);

    // A request is logged as JSON in the file, never on stdout or stderr.
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
    await stop(run);
    const log = readFileSync(logPath, 'utf8').trim().split('\n');
    expect(log.length).toBeGreaterThan(0);
    for (const line of log) expect(() => JSON.parse(line)).not.toThrow();
    expect(log.some((l) => (JSON.parse(l) as { msg?: string }).msg === 'incoming request')).toBe(true);
    expect(statSync(logPath).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'logs')).mode & 0o077).toBe(0);
    for (const out of [run.stdout(), run.stderr()])
      for (const line of out.split('\n')) expect(line.trimStart().startsWith('{'), line).toBe(false);
  }, 60_000);

  it('--log-format json puts only JSON lines on stdout and the banner on stderr', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const run = await serve(home, ['--log-format', 'json'], 'stderr', /Stop: .*\n/);
    cleanups.push(() => stop(run));
    const origin = /Sluice is serving (\S+)/.exec(run.stderr())?.[1] as string;
    expect(run.stderr()).toMatch(/Login link: http/);
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
    await stop(run);
    const out = run.stdout().trim().split('\n');
    expect(out.length).toBeGreaterThan(0);
    for (const line of out) expect(() => JSON.parse(line), line).not.toThrow();
    expect(run.stdout()).not.toContain('code=');
  }, 60_000);

  it('refuses an unknown --log-format in one line and serves nothing', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const result = await runCli(['serve', '--port', '0', '--log-format', 'xml'], {
      home,
      env: { SLUICE_AS: '' },
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/--log-format "xml": use file or json/);
  }, 30_000);
});
