// Helpers for the driver e2e tests: a Sluice home, the real `sluice drive` process (spawned in its
// own process group so a test can SIGKILL it, or its whole tree), and readers for what the
// scripted model server received.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HostContext } from '../../src/host/identity/context.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import type { InboxState } from '../../src/store/schema.js';
import { type RecordedRequest, userContent } from '../e2e/support/model-server.js';
import { SLUICE_BIN } from '../support/host.js';

export interface DriveHome {
  home: string;
  ctx: HostContext;
  owner: Principal;
  agent: Principal;
  /** Sends a DM from the owner to the agent; returns the message id. */
  send(body: string, attachments?: { bytes: Uint8Array; name: string }[]): Promise<string>;
  /** Inbox states of the agent, in FIFO order. */
  states(): Promise<{ id: string; state: InboxState; failure_kind: string | null }[]>;
  close(): Promise<void>;
}

/**
 * SIGKILLs every process whose command line names `home`. Codex runs its sandboxed file helper
 * under `bwrap --new-session`, which leaves the driver's process group, so the group kill misses it
 * and one sleeping helper outlived each suite run. Linux only (/proc); elsewhere nothing to do.
 */
function killLeftBehind(home: string): void {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      if (Number(pid) === process.pid) continue;
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(home)) process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already, or not ours to read
    }
  }
}

/** A fresh home with `agentName` (turn-settled); `db` puts its store elsewhere (a PostgreSQL URL). */
export async function openDriveHome(agentName = 'bot', options: { db?: string } = {}): Promise<DriveHome> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-drive-'));
  const ctx = await openHost({ home, db: options.db, durability: 'normal', pollMs: 20 });
  await initHome(ctx);
  const owner = await resolvePrincipal(ctx, 'owner');
  const agent = await addPrincipal(ctx, { name: agentName, kind: 'agent', settlement: 'turn' });
  return {
    home,
    ctx,
    owner,
    agent,
    async send(body, attachments = []) {
      const ids = [];
      for (const a of attachments) ids.push((await putMedia(ctx, owner, a.bytes, a.name)).attachment_id);
      return (await sendMessage(ctx, owner, { to: agent.name, body, attachmentIds: ids })).message_id;
    },
    async states() {
      const rows = await ctx.store.db
        .selectFrom('inbox')
        .select(['message_id', 'state', 'failure_kind'])
        .where('agent_id', '=', agent.id)
        .orderBy('position')
        .execute();
      return rows.map((r) => ({ id: r.message_id, state: r.state, failure_kind: r.failure_kind }));
    },
    async close() {
      killLeftBehind(home);
      await ctx.store.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export interface DriverProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout has a line matching `pattern` (rejects after `timeoutMs`). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL the driver process alone (its client is orphaned, as in a crash). */
  killDriver(): void;
  /** SIGKILL the whole group: driver, client, MCP servers. */
  killTree(): void;
  /** SIGTERM, then the whole group after a grace period. */
  stop(): Promise<void>;
}

/** Spawns `sluice drive <client> --as AGENT …` in its own process group. */
export function startDriver(
  client: 'claude' | 'codex',
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  hardTimeoutMs = 240_000,
): DriverProcess {
  const child = spawn(process.execPath, [SLUICE_BIN, 'drive', client, ...args], {
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    for (const w of [...waiters]) {
      const line = out.split('\n').find((l) => w.pattern.test(l));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  };
  const hard = setTimeout(killGroup, hardTimeoutMs);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(hard);
      resolve({ code, signal });
    });
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitForOutput(pattern, timeoutMs = 60_000) {
      const seen = out.split('\n').find((l) => pattern.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const t = setTimeout(
          () =>
            reject(
              new Error(`no output matching ${pattern} in ${timeoutMs}ms; stdout: ${out}\nstderr: ${err}`),
            ),
          timeoutMs,
        );
        waiters.push({
          pattern,
          resolve: (l) => {
            clearTimeout(t);
            resolve(l);
          },
        });
      });
    },
    exited,
    killDriver() {
      child.kill('SIGKILL');
    },
    killTree: killGroup,
    async stop() {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // gone
      }
      const done = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
      if (!done) killGroup();
      await exited;
      killGroup();
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value that is not undefined (or times out). */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const ENVELOPE_MARK = '"schema":"sluice.delivery.v1"';

/** The delivery envelope texts in a model request (history included), oldest first. */
export function envelopesIn(req: RecordedRequest): string[] {
  const out: string[] = [];
  for (const m of userContent(req).messages)
    for (const t of m.texts) if (t.includes(ENVELOPE_MARK)) out.push(t);
  if (req.api === 'openai') {
    // Codex carries additionalContext as developer text wrapped in <sluice>…</sluice>.
    for (const t of userContent(req).texts) {
      if (t.includes(ENVELOPE_MARK) && !out.includes(t)) out.push(t);
    }
  }
  return out;
}

/** Message ids of one envelope text (its JSON line). */
export function envelopeIds(text: string): string[] {
  const line = text.split('\n').find((l) => l.includes(ENVELOPE_MARK));
  if (!line) return [];
  const json = line.slice(line.indexOf('{'));
  return (JSON.parse(json) as { messages: { id: string }[] }).messages.map((m) => m.id);
}

/** The envelope each turn delivered, in order: the newest envelope of each distinct request. */
export function deliveredTurns(requests: readonly RecordedRequest[]): string[][] {
  const turns: string[][] = [];
  let last: string | undefined;
  for (const req of requests) {
    const envelopes = envelopesIn(req);
    const newest = envelopes[envelopes.length - 1];
    if (newest === undefined || newest === last) continue;
    last = newest;
    turns.push(envelopeIds(newest));
  }
  return turns;
}
