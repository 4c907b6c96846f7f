import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';

const NO_STACK = /^\s+at /m;

/** Starts `sluice serve …` and resolves with its stdout once the login link is printed. */
function startServe(home: string, args: string[]): { child: ChildProcess; ready: Promise<string> } {
  const child = spawn(process.execPath, [SLUICE_BIN, 'serve', ...args], {
    env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (/Login link: \S+\n/.test(out)) resolve(out);
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  return { child, ready };
}

/** A self-signed certificate for localhost and its key, made by openssl in `dir`. */
function selfSignedPair(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}-cert.pem`);
  const key = join(dir, `${name}-key.pem`);
  const subject = ['-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'];
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', ...subject],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

describe('sluice serve: one line for every refusal, and nothing beyond loopback in the clear', {
  timeout: 180_000,
}, () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('on a busy port: one line with a hint, exit 1, no stack trace', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => blocker.close());
    const port = (blocker.address() as { port: number }).port;
    const run = await runCli(['serve', '--port', String(port)], { home });
    expect(run.code).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(`127.0.0.1:${port} is already in use`);
    expect(run.stderr).toContain('--port');
    expect(run.stderr).not.toMatch(NO_STACK);
  });

  it.each([
    [
      ['--host', '0.0.0.0'],
      /reachable from other machines: give --tls-cert and --tls-key, or --insecure-remote/,
    ],
    [['--host', '192.0.2.10'], /reachable from other machines/],
    [['--tls-cert', '/nonexistent.pem'], /--tls-cert and --tls-key go together/],
    [
      ['--tls-cert', '/nonexistent.pem', '--tls-key', '/nonexistent.key'],
      /--tls-cert \/nonexistent.pem: ENOENT/,
    ],
    [['--allowed-host', 'evil example'], /--allowed-host .* is not a host name/],
  ])('refuses %j with one line and exit 1, before listening', async (args, message) => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const run = await runCli(['serve', '--port', '0', ...args], { home });
    expect(run.code).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(message);
  });

  it('refuses a certificate or key that is not one, or a key of another certificate, with one line and exit 1', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const junk = join(home, 'junk.pem');
    writeFileSync(junk, 'not a certificate\n');
    const a = selfSignedPair(home, 'a');
    const b = selfSignedPair(home, 'b');
    for (const [cert, key, reason] of [
      [junk, junk, 'ERR_OSSL_PEM_NO_START_LINE'],
      [a.cert, junk, 'ERR_OSSL'],
      [a.cert, b.key, 'ERR_OSSL_X509_KEY_VALUES_MISMATCH'],
    ] as const) {
      const run = await runCli(['serve', '--port', '0', '--tls-cert', cert, '--tls-key', key], { home });
      expect(run.code).toBe(1);
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(
        new RegExp(
          `^sluice: invalid_params: --tls-cert and --tls-key must be a PEM certificate and its private key \\(${reason}`,
        ),
      );
      expect(run.stderr).not.toMatch(NO_STACK);
    }
    expect(existsSync(join(home, 'logs', 'errors.log'))).toBe(false);
  });

  it('with --insecure-remote on all interfaces, prints an address a browser can open', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const { child, ready } = startServe(home, ['--host', '0.0.0.0', '--port', '0', '--insecure-remote']);
    cleanups.push(() => child.kill('SIGKILL'));
    const out = await ready;
    const served = /Sluice is serving (\S+)/.exec(out)?.[1] as string;
    expect(served).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(out).not.toContain('0.0.0.0');
    expect((await fetch(`${served}/healthz`)).status).toBe(200);
  });

  it('serves HTTPS with --tls-cert/--tls-key, and the session cookie is Secure', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    const { cert, key } = selfSignedPair(home, 'localhost');
    const { child, ready } = startServe(home, ['--port', '0', '--tls-cert', cert, '--tls-key', key]);
    cleanups.push(() => child.kill('SIGKILL'));
    const link = new URL(/Login link: (\S+)/.exec(await ready)?.[1] as string);
    expect(link.protocol).toBe('https:');
    const res = await new Promise<{ status: number; cookie: string }>((resolve, reject) => {
      const req = request(
        `${link.origin}/login`,
        {
          method: 'POST',
          rejectUnauthorized: false,
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
        },
        (r) => {
          r.resume();
          resolve({ status: r.statusCode ?? 0, cookie: String(r.headers['set-cookie'] ?? '') });
        },
      );
      req.on('error', reject);
      req.end(`code=${link.searchParams.get('code')}`);
    });
    expect(res.status).toBe(303);
    expect(res.cookie).toContain('; Secure');
  });

  it('an internal error is one line with an error id; the stack goes to <home>/logs/errors.log', async () => {
    const { home, cleanup } = tempHome();
    cleanups.push(cleanup);
    expect((await runCli(['init'], { home })).code).toBe(0);
    // A table gone under the store: an error nobody classified (a damaged or foreign file is
    // `unavailable` now, test/cli/store-faults.test.ts).
    const db = new Database(join(home, 'sluice.db'));
    db.pragma('foreign_keys = OFF');
    db.exec('drop table channels');
    db.close();
    const run = await runCli(['channel', 'ls'], { home });
    expect(run.code).toBe(70);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    const id = /^sluice: internal error (E[0-9a-f]{8}) \(a bug; details in (\S+)\)$/.exec(run.stderr.trim());
    expect(id, run.stderr).not.toBeNull();
    expect(run.stderr).not.toMatch(NO_STACK);
    const log = readFileSync(join(home, 'logs', 'errors.log'), 'utf8');
    const entry = JSON.parse(log.trim().split('\n').pop() as string);
    expect(entry).toMatchObject({ id: id?.[1] });
    expect(entry.stack).toMatch(NO_STACK);
  });
});
