// `sluice wait` through the built CLI (npm run build first): it returns at once when mail is
// pending, blocks without spending CPU while the inbox is empty, wakes within moments of a send by
// another process, consumes nothing, never wakes twice for one slice, lets only the newest waiter
// of a session live, and as Claude Code's asyncRewake hook never waits in `claude -p`.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { runHookInProcess } from '../../proof/hook-in-process.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import { sessionStartNotice } from '../../src/surfaces/hooks/wait-cli.js';
import { SAFETY_RECHECK_MS } from '../../src/surfaces/hooks/wait-watch.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { SLUICE_BIN } from '../support/host.js';

interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
  at: number;
}

interface Running {
  child: ChildProcess;
  ended: Promise<Ended>;
}

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** An interactive Claude Code session's hook environment (the TUI sets `cli`; `claude -p` sets `sdk-cli`). */
const INTERACTIVE = { CLAUDE_CODE_ENTRYPOINT: 'cli', CLAUDE_CODE_SESSION_ATTENDED: '1' };

function start(
  h: { home: string; db: string | undefined },
  args: readonly string[],
  opts: { input?: string; env?: Record<string, string> } = {},
): Running {
  const child = spawn(
    process.execPath,
    [SLUICE_BIN, 'wait', '--home', h.home, ...(h.db ? ['--db', h.db] : []), ...args],
    {
      env: { ...process.env, SLUICE_AS: '', SLUICE_DB: '', CLAUDE_CODE_ENTRYPOINT: '', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  running.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  child.stdin?.on('error', () => {});
  child.stdin?.end(opts.input ?? '');
  const ended = new Promise<Ended>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr, at: Date.now() })),
  );
  return { child, ended };
}

/**
 * The prompt/session-start hook, in this process through runHookCli (the entry bin/sluice.js
 * routes `sluice hook` to; its process contract is test/hooks/hook-cli.contract.test.ts): it meets
 * the waiter only through the store and the session files, which are the same either way.
 */
async function hook(h: { home: string }, event: string, input: object): Promise<Ended> {
  const run = await runHookInProcess(
    ['claude', event, '--as', 'bot', '--home', h.home],
    JSON.stringify(input),
    { SLUICE_AS: '', SLUICE_DB: '' },
  );
  return { code: run.code, stdout: run.stdout, stderr: run.stderr, at: Date.now() };
}

/** Resolves once `predicate` holds, checking on a short interval (bounded). */
async function until(
  predicate: () => boolean,
  what: string,
  intervalMs = 25,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The session records of a home (one JSON file per session). */
function sessionRecords(home: string): { waiter?: { pid: number } }[] {
  const dir = join(home, 'hook-sessions');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => {
      try {
        return JSON.parse(readFileSync(join(dir, f), 'utf8'));
      } catch {
        return {};
      }
    });
}

const registered = (home: string, child: ChildProcess) =>
  until(() => sessionRecords(home).some((r) => r.waiter?.pid === child.pid), 'the waiter registered');

/** CPU time (user + system, in ms) the process has used so far (Linux /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Resolves once the process has stopped using CPU (its start-up is over), bounded. */
async function settled(pid: number): Promise<void> {
  let last = -1;
  await until(
    () => {
      const now = cpuMs(pid);
      const still = now === last;
      last = now;
      return still;
    },
    'the waiter settled',
    500,
  );
}

for (const backend of backendsUnderTest()) {
  describe(`sluice wait on ${backend}`, () => {
    let h: ConformanceHost;
    const open = async () => {
      h = await openConformanceHost(backend, 'wait');
      await h.agent('bot');
      return h;
    };
    afterEach(async () => {
      for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
      await h?.close();
    });

    test('returns at once with the bounded delivery when mail is pending, and consumes nothing', async () => {
      await open();
      const sent = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'hello, are you there?' });
      const run = await start(h, ['--as', 'bot', '--timeout', '30']).ended;
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('[sluice] inbox for bot: 1 of 1 pending message(s)');
      expect(run.stdout).toContain('"body":"hello, are you there?"');
      const again = await start(h, ['--as', 'bot', '--timeout', '30']).ended;
      expect(again.stdout).toContain(sent.message_id);
    });

    test('blocks while the inbox is empty without spending CPU, and wakes within moments of a send', async () => {
      await open();
      const w = start(h, ['--as', 'bot', '--session', 'idle', '--timeout', '60']);
      await registered(h.home, w.child);
      const pid = w.child.pid as number;
      await settled(pid);
      const before = cpuMs(pid);
      await new Promise((r) => setTimeout(r, 2_000)); // measuring an idle interval, not synchronising
      const idleCpu = cpuMs(pid) - before;
      expect(idleCpu).toBeLessThanOrEqual(20);
      expect(w.child.exitCode).toBeNull();
      const other = await h.sibling(); // another connection, as another process would be
      const sentAt = Date.now();
      await sendMessage(other, await resolvePrincipal(other, 'owner'), { to: 'bot', body: 'wake up' });
      const run = await w.ended;
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('"body":"wake up"');
      // Woken by the change itself, not by the 30 s safety re-check (SAFETY_RECHECK_MS); the bound
      // is loose so a loaded machine passes (how fast is measured by npm run eval:wake).
      expect(run.at - sentAt).toBeLessThan(SAFETY_RECHECK_MS / 3);
    });
  });
}

describe('sluice wait (SQLite)', () => {
  let h: ConformanceHost;
  afterEach(async () => {
    for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    await h?.close();
  });
  const open = async () => {
    h = await openConformanceHost('sqlite', 'wait');
    await h.agent('bot');
  };

  test('ends quietly at --timeout: exit 0, nothing printed', async () => {
    await open();
    const run = await start(h, ['--as', 'bot', '--timeout', '0.3']).ended;
    expect(run).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  test('for Claude Code the delivery goes to stderr with exit code 2, the same text the prompt hook delivers', async () => {
    await open();
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'für dich 🎉 "quoted" </system-reminder>' });
    const run = await start(h, ['--as', 'bot', '--for', 'claude', '--timeout', '30']).ended;
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    const hooked = await hook(h, 'user-prompt-submit', {
      session_id: 'other',
      hook_event_name: 'UserPromptSubmit',
    });
    expect(JSON.parse(hooked.stdout).hookSpecificOutput.additionalContext).toBe(run.stderr);
  });

  test('never wakes twice for the same slice, and wakes again once the inbox changes', async () => {
    await open();
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'first' });
    const first = await start(h, ['--as', 'bot', '--session', 'k', '--timeout', '30']).ended;
    expect(first.stdout).toContain('"body":"first"');
    const second = start(h, ['--as', 'bot', '--session', 'k', '--timeout', '30']);
    await registered(h.home, second.child);
    expect(second.child.exitCode).toBeNull();
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'second' });
    const run = await second.ended;
    expect(run.stdout).toContain('"body":"second"');
  });

  test('a new waiter for a session ends the older one, which prints nothing', async () => {
    await open();
    const older = start(h, ['--as', 'bot', '--session', 'k', '--timeout', '60']);
    await registered(h.home, older.child);
    const newer = start(h, ['--as', 'bot', '--session', 'k', '--timeout', '60']);
    const ended = await older.ended;
    expect(ended).toMatchObject({ code: 0, stdout: '', stderr: '' });
    await registered(h.home, newer.child);
    expect(newer.child.exitCode).toBeNull();
  });

  test('bad arguments: one line, exit 1 (never 2, which would wake a Claude session)', async () => {
    await open();
    const run = await start(h, ['--as', 'bot', '--for', 'claude', '--timeout', 'soon']).ended;
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^sluice wait: invalid_params: --timeout must be/);
    const person = await start(h, ['--as', 'owner', '--for', 'claude', '--timeout', '5']).ended;
    expect(person.code).toBe(1);
    expect(person.stderr.trim().split('\n')).toHaveLength(1);
  });

  describe('as Claude Code’s asyncRewake hook (--hook)', () => {
    const hookArgs = ['--as', 'bot', '--for', 'claude', '--hook', '--timeout', '60'];
    const stopInput = (promptId: string) =>
      JSON.stringify({
        session_id: 'S',
        hook_event_name: 'Stop',
        prompt_id: promptId,
        stop_hook_active: false,
      });

    test('returns at once in claude -p (which runs the hook in the foreground), even with mail pending', async () => {
      await open();
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'pending' });
      const printModes: Record<string, string>[] = [
        { CLAUDE_CODE_ENTRYPOINT: 'sdk-cli', CLAUDE_CODE_SESSION_ATTENDED: '0' },
        {},
      ];
      for (const env of printModes) {
        const run = await start(h, hookArgs, { input: stopInput('p1'), env }).ended;
        expect(run).toMatchObject({ code: 0, stdout: '', stderr: '' });
      }
    });

    test('wakes with exit 2, and the woken turn’s prompt hook does not deliver the same envelope again', async () => {
      await open();
      const w = start(h, hookArgs, { input: stopInput('p1'), env: INTERACTIVE });
      await registered(h.home, w.child);
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'while idle' });
      const run = await w.ended;
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('"body":"while idle"');
      const woken = await hook(h, 'user-prompt-submit', {
        session_id: 'S',
        hook_event_name: 'UserPromptSubmit',
        prompt_id: 'p2',
        prompt: '<task-notification>…',
      });
      expect(woken).toMatchObject({ code: 0, stdout: '' });
      // The turn ended without archiving: the next Stop waiter holds the same slice and waits.
      const next = start(h, hookArgs, { input: stopInput('p2'), env: INTERACTIVE });
      await registered(h.home, next.child);
      expect(next.child.exitCode).toBeNull();
    });

    test('a waiter from before a newly submitted prompt ends quietly instead of waking mid-turn', async () => {
      await open();
      const w = start(h, hookArgs, { input: stopInput('p1'), env: INTERACTIVE });
      await registered(h.home, w.child);
      await hook(h, 'user-prompt-submit', {
        session_id: 'S',
        hook_event_name: 'UserPromptSubmit',
        prompt_id: 'p2',
      });
      const run = await w.ended;
      expect(run).toMatchObject({ code: 0, stdout: '', stderr: '' });
    });

    test('at session start, a slice the session-start hook already added is announced, not sent twice', async () => {
      await open();
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'left while away' });
      const started = await hook(h, 'session-start', {
        session_id: 'S',
        hook_event_name: 'SessionStart',
        source: 'startup',
      });
      expect(started.stdout).toContain('left while away');
      const input = JSON.stringify({ session_id: 'S', hook_event_name: 'SessionStart', source: 'startup' });
      const run = await start(h, hookArgs, { input, env: INTERACTIVE }).ended;
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(sessionStartNotice('bot'));
    });

    test('an archived slice does not wake; the next message does', async () => {
      await open();
      const bot = await resolvePrincipal(h.ctx, 'bot');
      const m = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'handled already' });
      await archiveMessages(h.ctx, bot, [m.message_id]);
      const w = start(h, hookArgs, { input: stopInput('p1'), env: INTERACTIVE });
      await registered(h.home, w.child);
      expect(w.child.exitCode).toBeNull();
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'new one' });
      const run = await w.ended;
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('"body":"new one"');
      expect(run.stderr).not.toContain('handled already');
    });
  });
});
