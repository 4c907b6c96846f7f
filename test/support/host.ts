import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { addAgentManager } from '../../src/host/agents/agent-managers.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const SLUICE_BIN = join(REPO_ROOT, 'bin/sluice.js');

/** A fresh temp home; `cleanup` removes it. */
export function tempHome(prefix = 'sluice-test-'): { home: string; cleanup: () => void } {
  const home = mkdtempSync(join(tmpdir(), prefix));
  return { home, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

export interface TestHost {
  ctx: HostContext;
  home: string;
  owner: Principal;
  agent(name: string, settlement?: 'explicit' | 'turn'): Promise<Principal>;
  person(name: string): Promise<Principal>;
  /** Makes `person` a manager of `agent` (as the owner): only managers add an agent to a group. */
  manage(agent: string, person: string): Promise<void>;
  close(): Promise<void>;
}

/** An initialised host on a temp home (SQLite unless SLUICE_TEST_DB names PostgreSQL). */
export async function openTestHost(
  options: { db?: string; durability?: 'full' | 'normal' } = {},
): Promise<TestHost> {
  const { home, cleanup } = tempHome();
  const ctx = await openHost({
    home,
    db: options.db,
    durability: options.durability ?? 'normal',
    pollMs: 10,
  });
  await initHome(ctx);
  const owner = await resolvePrincipal(ctx, 'owner');
  return {
    ctx,
    home,
    owner,
    agent: (name, settlement = 'explicit') => addPrincipal(ctx, { name, kind: 'agent', settlement }),
    person: (name) => addPrincipal(ctx, { name, kind: 'person' }),
    async manage(agent, person) {
      await addAgentManager(ctx, owner, agent, person);
    },
    async close() {
      await ctx.store.close();
      cleanup();
    },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Spawns `command` and collects its exit code and output. With `input` its stdin is a pipe that
 * receives `input` and then ends; without, stdin is ignored.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; input?: string | Uint8Array },
): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      env: options.env,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolvePromise({
        code: code ?? -1,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Runs the built CLI (`npm run build` first) in a child process. */
export function runCli(
  args: readonly string[],
  options: { home: string; input?: string | Uint8Array; env?: Record<string, string> },
): Promise<CliResult> {
  return runCommand(process.execPath, [SLUICE_BIN, ...args], {
    env: { ...process.env, SLUICE_HOME: options.home, SLUICE_AS: '', ...options.env },
    input: options.input ?? '',
  });
}
