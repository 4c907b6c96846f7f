// `next` is "the exact command that continues" a bounded read: run as printed, through a shell, it
// must act as the same principal on the same store. Found by a newcomer: it dropped `--as` and
// `--home`, so the printed command failed ("owner is a person: people have no inbox") or read
// another home.

import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPageBytes } from '../../src/core/output-cap.js';
import { runCliHere } from '../support/cli-in-process.js';
import { type CliResult, runCommand, SLUICE_BIN, tempHome } from '../support/host.js';

/** Runs a command line through sh, with `sluice` on PATH and no SLUICE_* in the environment. */
function shell(
  commandLine: string,
  binDir: string,
  extraEnv: Record<string, string> = {},
): Promise<CliResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('SLUICE_') && k !== 'CODEX_THREAD_ID' && k !== 'CLAUDECODE')
      env[k] = v;
  env.PATH = `${binDir}:${env.PATH ?? ''}`;
  Object.assign(env, extraEnv);
  return runCommand('sh', ['-c', commandLine], { env });
}

describe('a bounded read’s next command, run as printed', { timeout: 120_000 }, () => {
  // A home whose path needs quoting, named only by --home (no SLUICE_HOME).
  const { home: base, cleanup } = tempHome();
  const home = join(base, "the team's home");
  const binDir = mkdtempSync(join(tmpdir(), 'sluice-bin-'));
  const bodies = Array.from({ length: 4 }, (_, i) => `${i}:${'x'.repeat(900)}`);
  const big = `big:${'y'.repeat(5000)}`;
  let bigId = '';
  const sluice = (args: string, env: Record<string, string> = {}) =>
    shell(`sluice --home '${home.replaceAll("'", "'\\''")}' ${args}`, binDir, env);
  /** The same command line (words without quoting) in this process, with no SLUICE_* but the home. */
  const here = (args: string[], env: Record<string, string> = {}) =>
    runCliHere(['--home', home, ...args], {
      home,
      env: { SLUICE_DB: undefined, CODEX_THREAD_ID: undefined, CLAUDECODE: undefined, ...env },
    });
  const ok = async (run: Promise<CliResult>) => {
    const r = await run;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };

  beforeAll(async () => {
    writeFileSync(join(binDir, 'sluice'), `#!/bin/sh\nexec '${process.execPath}' '${SLUICE_BIN}' "$@"\n`);
    chmodSync(join(binDir, 'sluice'), 0o755);
    // Set up in this process: what runs through sh is each test's read and the next it prints.
    await ok(sluice('init'));
    await ok(here(['agent', 'add', 'bot']));
    for (const body of bodies) await ok(here(['message', 'send', 'bot', '-m', body]));
    await ok(here(['agent', 'add', 'reader']));
    bigId = (await ok(here(['message', 'send', 'reader', '-m', big]))).trim();
    await ok(here(['agent', 'add', 'cjk']));
    for (let i = 0; i < 3; i++) await ok(here(['message', 'send', 'cjk', '-m', `${i}${'漢'.repeat(5000)}`]));
  }, 60_000);
  afterAll(() => {
    cleanup();
    rmSync(binDir, { recursive: true, force: true });
  });

  it('ls: following next from a --as/--home listing visits every message once, as the same agent', async () => {
    let out = await ok(sluice('message ls --as bot --json --include-body --max-chars 2000'));
    const seen: string[] = [];
    for (let pages = 0; pages < 10; pages++) {
      const page = JSON.parse(out) as { messages: { id: string; body: string }[]; next: string | null };
      for (const m of page.messages) seen.push(m.body);
      if (page.next === null) break;
      expect(page.next.startsWith('sluice message ls ')).toBe(true);
      out = await ok(shell(page.next, binDir));
    }
    expect(seen).toEqual(bodies);
  });

  it('read: following next from a --as/--home part reads the whole body', async () => {
    let out = await ok(sluice(`message read ${bigId} --as reader --json --max-chars 2000`));
    let body = '';
    for (let parts = 0; parts < 20; parts++) {
      const part = JSON.parse(out) as { body: string; next: string | null };
      body += part.body;
      if (part.next === null) break;
      expect(part.next.startsWith('sluice message read ')).toBe(true);
      out = await ok(shell(part.next, binDir));
    }
    expect(body).toBe(big);
  });

  // The client is detected from the environment when the command runs (defaultReadBudget(process.env)),
  // so this runs in this process.
  it('--max-chars never lifts the client byte cap in a model shell, and is the only bound in a terminal', async () => {
    const args = 'message ls --as cjk --json --include-body --max-chars 18000'.split(' ');
    // The default page: the client's cap less room for 16 receipts (src/core/output-cap.ts).
    const shells: [Record<string, string>, number][] = [
      [{ CLAUDECODE: '1' }, defaultPageBytes(30_000)],
      [{ CODEX_THREAD_ID: 't1' }, defaultPageBytes(10_000)],
    ];
    for (const [env, cap] of shells) {
      const out = await ok(here(args, env));
      expect(Buffer.byteLength(out)).toBeLessThanOrEqual(cap);
      expect(JSON.parse(out).next).not.toBeNull();
    }
    // A person's terminal: 18,000 characters, three 5,001-character bodies (~45 KB of UTF-8) in one page.
    const out = await ok(here(args));
    expect(out.length).toBeLessThanOrEqual(18_000);
    expect(Buffer.byteLength(out)).toBeGreaterThan(40_000);
    expect(JSON.parse(out)).toMatchObject({ next: null });
  });
});
