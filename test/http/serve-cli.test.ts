import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SLUICE_BIN, tempHome } from '../support/host.js';

describe('sluice serve (the built CLI in its own process)', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('initialises the home, prints a working single-use login link, logs JSON to its log file (nothing on stderr) and stops cleanly on SIGTERM', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const child = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => child.kill('SIGKILL'));
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const link = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no login link; stderr: ${stderr}`)), 20_000);
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        const match = /Login link: (\S+)/.exec(stdout);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    const url = new URL(link);
    expect(url.pathname).toBe('/login');
    expect((await fetch(`${url.origin}/healthz`)).status).toBe(200);
    expect(url.searchParams.get('code')).toMatch(/^sll_/);
    expect((await fetch(link)).status).toBe(200);
    const login = await fetch(`${url.origin}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `code=${url.searchParams.get('code')}`,
    });
    expect(login.status).toBe(303);
    expect(login.headers.get('set-cookie')).toContain('HttpOnly');

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // The request log goes to <home>/logs/serve.log (the banner says so); stderr stays quiet.
    expect(stderr).toBe('');
    const log = readFileSync(join(home, 'logs', 'serve.log'), 'utf8');
    const lines = log.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(log).toContain('shutting down');
  });

  it('refuses a bad port with one line and exit code 1', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const child = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', 'eighty'], {
      env: { ...process.env, SLUICE_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('invalid_params');
  });
});
