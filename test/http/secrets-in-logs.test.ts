import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';

/** Every file under `dir` (the home's logs), as text. */
function filesUnder(dir: string): { path: string; text: string }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [{ path, text: readFileSync(path, 'utf8') }];
  });
}

describe('no secret reaches a log (a whole browser and device session against the built CLI)', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('login code, session id and access tokens appear in no log line; the code only in serve’s own stdout', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const env = { SLUICE_AS: '' };
    expect((await runCli(['init'], { home, env })).code).toBe(0);
    expect((await runCli(['agent', 'add', 'helper'], { home, env })).code).toBe(0);
    const child: ChildProcess = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '', SLUICE_LOG_LEVEL: 'debug' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => child.kill('SIGKILL'));
    let stdout = '';
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const link = await new Promise<URL>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no login link; stderr: ${stderr}`)), 20_000);
      child.stdout?.on('data', (d: Buffer) => {
        stdout += d.toString();
        const match = /Login link: (\S+)/.exec(stdout);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(new URL(match[1]));
        }
      });
    });
    const origin = link.origin;
    const loginCode = link.searchParams.get('code') as string;
    const page = { 'sec-fetch-site': 'same-origin' };

    // The browser: follow the link, press the button, use the page, log out.
    expect((await fetch(link)).status).toBe(200);
    const signIn = await fetch(`${origin}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...page },
      body: `code=${loginCode}`,
    });
    expect(signIn.status).toBe(303);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const sessionSecret = cookie.split('=')[1] as string;
    const hello = await fetch(`${origin}/rpc`, {
      method: 'POST',
      headers: { cookie, ...page, 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"host.hello"}',
    });
    expect(hello.status).toBe(200);

    // A device and an agent: access tokens from the CLI, on /rpc, /mcp and /media.
    const ownerToken = (await runCli(['token', 'owner', '--expires', '1d'], { home, env })).stdout.trim();
    const agentToken = (await runCli(['token', 'helper'], { home, env })).stdout.trim();
    const secondCode = new URL(
      (await runCli(['login-link', '--url', origin], { home, env })).stdout.trim(),
    ).searchParams.get('code') as string;
    const upload = await fetch(`${origin}/media`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ownerToken}`,
        'x-filename': 'note.txt',
        'content-type': 'text/plain',
      },
      body: 'hello',
    });
    expect(upload.status).toBe(201);
    const { attachment_id } = (await upload.json()) as { attachment_id: string };
    expect((await fetch(`${origin}/media/${attachment_id}`, { headers: { cookie, ...page } })).status).toBe(
      200,
    );
    const mcp = await fetch(`${origin}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${agentToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(mcp.status).toBe(200);
    await mcp.text();
    // Secrets where they do not belong: in a query string, and a wrong bearer token.
    expect((await fetch(`${origin}/rpc?token=${ownerToken}`, { method: 'POST', body: '{}' })).status).toBe(
      401,
    );
    expect((await fetch(`${origin}/login?code=${secondCode}`)).status).toBe(200);
    const out = await fetch(`${origin}/logout`, { method: 'POST', headers: { cookie, ...page } });
    expect(await out.json()).toEqual({ ended: true });

    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;

    // Request logs go to <home>/logs/serve.log by default (stdout is the person's banner).
    const logs = [{ path: 'serve stderr', text: stderr }, ...filesUnder(join(home, 'logs'))];
    expect(logs.find((l) => l.path.endsWith('serve.log'))?.text).toContain('incoming request');
    for (const secret of [loginCode, secondCode, sessionSecret, ownerToken, agentToken]) {
      expect(secret.length).toBeGreaterThan(20);
      for (const log of logs) expect(log.text.includes(secret), `${log.path} holds a secret`).toBe(false);
    }
    // stdout is the login link, and nothing else secret.
    for (const secret of [secondCode, sessionSecret, ownerToken, agentToken])
      expect(stdout).not.toContain(secret);
  }, 120_000);
});
