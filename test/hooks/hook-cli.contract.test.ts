// The hook contract, through the built CLI in a child process (npm run build first): valid hook
// JSON and exit 0 when there is mail; empty stdout, one stderr line and exit 0 on any failure.
// The table of bad-stdin and bad-argument cases runs in this process through runHookCli, the entry
// bin/sluice.js routes `sluice hook` to (a process start-up each cost more than the cases): the
// fail-open contract as a real client sees it stays covered by the spawned cases (missing store,
// stdin over the bound, and every delivery).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runHookInProcess } from '../../proof/hook-in-process.js';
import { utf8Length } from '../../src/core/measure.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openTestHost, SLUICE_BIN, type TestHost, tempHome } from '../support/host.js';

interface HookRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `sluice hook …` with `input` on stdin; tolerates a hook that stops reading early. */
function hook(
  args: readonly string[],
  input: string | Buffer,
  env: Record<string, string> = {},
): Promise<HookRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, 'hook', ...args], {
      env: { ...process.env, SLUICE_AS: '', SLUICE_DB: '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.stdin.on('error', () => {});
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** The same run in this process, through the binary's entry (runHookCli). */
const hookInProcess = (args: readonly string[], input: string): Promise<HookRun> =>
  runHookInProcess(args, input, { SLUICE_AS: '', SLUICE_DB: '' }).then(({ code, stdout, stderr }) => ({
    code,
    stdout,
    stderr,
  }));

const promptInput = (prompt: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    session_id: `s-${Math.random()}`,
    cwd: '/tmp',
    hook_event_name: 'UserPromptSubmit',
    prompt,
    ...extra,
  });

function expectFailedOpen(run: HookRun, reason: RegExp): void {
  expect(run.code).toBe(0);
  expect(run.stdout).toBe('');
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(reason);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

let host: TestHost;
let ids: string[];
beforeAll(async () => {
  host = await openTestHost();
  await host.agent('bot');
  await host.agent('idle');
  ids = [];
  for (const body of ['hello "bot"', 'second ✓', `third ${'z'.repeat(3000)}`]) {
    ids.push((await sendMessage(host.ctx, host.owner, { to: 'bot', body })).message_id);
  }
});
afterAll(() => host.close());

describe('sluice hook claude|codex (built CLI)', () => {
  test('prints the Claude hook JSON with the complete bodies and exits 0', async () => {
    const run = await hook(
      ['claude', 'user-prompt-submit', '--as', 'bot', '--home', host.home],
      promptInput('hi'),
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    const out = JSON.parse(run.stdout);
    expect(Object.keys(out)).toEqual(['hookSpecificOutput']);
    expect(out.hookSpecificOutput.hookEventName).toBe('UserPromptSubmit');
    const context: string = out.hookSpecificOutput.additionalContext;
    expect(context.length).toBeLessThanOrEqual(10_000);
    expect(utf8Length(context)).toBeLessThanOrEqual(16_384);
    const envelope = JSON.parse(context.split('\n')[1] as string);
    expect(envelope.messages.map((m: { id: string }) => m.id)).toEqual(ids);
  });

  test('reads the agent and home from SLUICE_AS and SLUICE_HOME, and answers SessionStart', async () => {
    const input = JSON.stringify({
      session_id: 'env-session',
      hook_event_name: 'SessionStart',
      source: 'startup',
    });
    const run = await hook(['codex', 'session-start'], input, { SLUICE_AS: 'bot', SLUICE_HOME: host.home });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).hookSpecificOutput.hookEventName).toBe('SessionStart');
  });

  test('a prompt of more than 256 KiB on stdin is read whole and answered', async () => {
    const big = promptInput(`pasted log ${'L'.repeat(1024 * 1024)}`);
    expect(big.length).toBeGreaterThan(256 * 1024);
    const run = await hook(['claude', 'user-prompt-submit', '--as', 'bot', '--home', host.home], big);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).hookSpecificOutput.additionalContext).toContain(ids[0]);
  });

  test('--metadata prints the short notice that names the listing command', async () => {
    const run = await hook(
      ['claude', 'user-prompt-submit', '--as', 'bot', '--home', host.home, '--metadata'],
      promptInput('hi'),
    );
    const context = JSON.parse(run.stdout).hookSpecificOutput.additionalContext;
    expect(context).toMatch(/^\[sluice\] 3 pending message\(s\) for bot; oldest from owner/);
    expect(context).toContain('sluice message ls --json --include-body');
  });

  test('the same session is not given the same delivery twice, unless its context was compacted', async () => {
    const argv = ['claude', 'session-start', '--as', 'bot', '--home', host.home];
    const start = (source: string) =>
      JSON.stringify({ session_id: 'dedup-1', hook_event_name: 'SessionStart', source });
    const first = await hook(argv, start('startup'));
    const again = await hook(argv, start('resume'));
    const compacted = await hook(argv, start('compact'));
    expect(first.stdout).not.toBe('');
    expect(again).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(compacted.stdout).toBe(first.stdout);
  });

  test('nothing pending prints nothing and exits 0', async () => {
    const run = await hook(
      ['claude', 'user-prompt-submit', '--as', 'idle', '--home', host.home],
      promptInput('hi'),
    );
    expect(run).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  test('a missing store fails open and creates nothing', async () => {
    const { home, cleanup } = tempHome();
    try {
      const run = await hook(
        ['claude', 'user-prompt-submit', '--as', 'bot', '--home', home],
        promptInput('hi'),
      );
      expectFailedOpen(run, /^sluice hook: not_found: no sluice store at .*sluice\.db/);
      expect(readdirSync(home)).toEqual([]);
      expect(existsSync(join(home, 'sluice.db'))).toBe(false);
    } finally {
      cleanup();
    }
  });

  test.each([
    ['not JSON', 'hello', /not JSON/],
    ['empty', '', /not JSON/],
    ['a JSON array', '[1,2]', /not a JSON object/],
    ['a wrong field type', JSON.stringify({ session_id: 7 }), /session_id is not a string/],
    ['another event', JSON.stringify({ hook_event_name: 'Stop' }), /this hook answers UserPromptSubmit/],
  ])('bad stdin (%s) fails open (in process)', async (_name, input, reason) => {
    const run = await hookInProcess(
      ['claude', 'user-prompt-submit', '--as', 'bot', '--home', host.home],
      input,
    );
    expectFailedOpen(run, reason);
  });

  test.each([
    [
      'an unknown agent',
      ['claude', 'user-prompt-submit', '--as', 'nobody'],
      /not_found: no principal named "nobody"/,
    ],
    ['a person', ['claude', 'user-prompt-submit', '--as', 'owner'], /owner is a person/],
    ['no agent at all', ['claude', 'user-prompt-submit'], /name the agent/],
    ['an unknown client', ['gemini', 'user-prompt-submit', '--as', 'bot'], /usage: sluice hook/],
    ['an unknown event', ['claude', 'stop', '--as', 'bot'], /usage: sluice hook/],
    [
      'an unknown option',
      ['claude', 'user-prompt-submit', '--as', 'bot', '--nope'],
      /unknown option "--nope"/,
    ],
  ])('%s fails open (in process)', async (_name, argv, reason) => {
    const run = await hookInProcess([...argv, '--home', host.home], promptInput('hi'));
    expectFailedOpen(run, reason);
  });

  test('stdin over the 16 MiB bound is refused without buffering it, and fails open', async () => {
    const run = await hook(
      ['claude', 'user-prompt-submit', '--as', 'bot', '--home', host.home],
      Buffer.alloc(17 * 1024 * 1024, 0x61),
    );
    expectFailedOpen(run, /too_large: hook input is over 16777216 bytes/);
  }, 30_000);

  test('Codex hook context stays within 10,000 bytes for a large backlog', async () => {
    const big = await openTestHost();
    try {
      await big.agent('bot');
      for (let i = 0; i < 16; i++) {
        await sendMessage(big.ctx, big.owner, { to: 'bot', body: `${i} ${'ü'.repeat(900)}` });
      }
      const run = await hook(
        ['codex', 'user-prompt-submit', '--as', 'bot', '--home', big.home],
        promptInput('hi'),
      );
      const context: string = JSON.parse(run.stdout).hookSpecificOutput.additionalContext;
      expect(utf8Length(context)).toBeLessThanOrEqual(10_000);
      expect(JSON.parse(context.split('\n')[1] as string).included).toBeGreaterThan(0);
    } finally {
      await big.close();
    }
  });
});
