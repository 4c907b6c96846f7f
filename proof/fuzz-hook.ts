import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { createChannel } from '../src/host/channels/channels.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal } from '../src/host/identity/principals.js';
import { sendMessage } from '../src/host/messages/messages.js';
import type { FuzzFailure, FuzzReport } from './fuzz-cli.js';
import { hostileValue } from './fuzz-rpc.js';
import { type HookRun, runHookInProcess } from './hook-in-process.js';
import { stateSnapshot } from './state-snapshot.js';

/** bin/sluice.js of this package, found from proof/ (source) or dist/proof/ (built). */
function sluiceBin(): string {
  const here = import.meta.dirname;
  return resolve(
    here,
    here.includes(`${join('dist', 'proof')}`) ? '../../bin/sluice.js' : '../bin/sluice.js',
  );
}

const HOOK_TIMEOUT_MS = 20_000;

/** Runs `sluice hook claude user-prompt-submit --as bot` with `input` on stdin, in a child process. */
function runHookProcess(home: string, input: Uint8Array): Promise<HookRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(
      process.execPath,
      [sluiceBin(), 'hook', 'claude', 'user-prompt-submit', '--as', 'bot'],
      {
        env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '', SLUICE_DB: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, HOOK_TIMEOUT_MS);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    // A hook may stop reading a refused payload early; that is not an error of the campaign.
    child.stdin.on('error', () => {});
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr, timedOut });
    });
    child.stdin.end(input);
  });
}

const validInput = (prompt: unknown, extra: Record<string, unknown> = {}) => ({
  session_id: 's-1',
  transcript_path: '/tmp/none.jsonl',
  cwd: '/tmp',
  hook_event_name: 'UserPromptSubmit',
  prompt,
  ...extra,
});

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/** Hook stdin: malformed, oversized (> 256 KiB), wrongly typed, binary, and valid. */
const hookInputs: fc.Arbitrary<{ kind: string; bytes: Uint8Array }> = fc.oneof(
  fc
    .constantFrom('', ' ', 'null', '[]', '1', '"x"', '{', '{"prompt":', 'true', '\u0000', '\ufeff{}')
    .map((t) => ({
      kind: 'malformed',
      bytes: utf8(t),
    })),
  fc.tuple(fc.string({ maxLength: 200 }), fc.nat()).map(([p, cut]) => {
    const text = JSON.stringify(validInput(p));
    return { kind: 'truncated', bytes: utf8(text.slice(0, cut % text.length)) };
  }),
  fc
    .dictionary(
      fc.constantFrom(
        'session_id',
        'cwd',
        'hook_event_name',
        'prompt',
        'transcript_path',
        '__proto__',
        'extra',
      ),
      hostileValue,
      { maxKeys: 5 },
    )
    .map((o) => ({ kind: 'wrong types', bytes: utf8(JSON.stringify(o)) })),
  fc.constantFrom('session_id', 'cwd', 'hook_event_name', 'prompt').chain((key) =>
    hostileValue.map((v) => ({
      kind: `wrong ${key}`,
      bytes: utf8(JSON.stringify(validInput('hi', { [key]: v }))),
    })),
  ),
  fc.uint8Array({ minLength: 1, maxLength: 2_000 }).map((bytes) => ({ kind: 'binary', bytes })),
  fc.constantFrom(
    { kind: 'huge prompt', bytes: utf8(JSON.stringify(validInput('p'.repeat(300 * 1024)))) },
    { kind: 'huge garbage', bytes: Buffer.alloc(300 * 1024, 0x7b) },
    { kind: 'huge nesting', bytes: utf8(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) },
    {
      kind: 'invalid utf-8',
      bytes: Buffer.concat([utf8('{"prompt":"'), Buffer.from([0xc3, 0x28, 0xff]), utf8('"}')]),
    },
  ),
  fc.string({ unit: 'grapheme', maxLength: 100 }).map((p) => ({
    kind: 'valid',
    bytes: utf8(JSON.stringify(validInput(p))),
  })),
);

/** Stdin whose delivery through a real pipe differs most from one in-memory chunk. */
const PIPE_EDGES: { kind: string; bytes: Uint8Array }[] = [
  { kind: 'empty', bytes: utf8('') },
  { kind: 'huge garbage', bytes: Buffer.alloc(300 * 1024, 0x7b) },
  { kind: 'huge prompt', bytes: utf8(JSON.stringify(validInput('p'.repeat(300 * 1024)))) },
  {
    kind: 'invalid utf-8',
    bytes: Buffer.concat([utf8('{"prompt":"'), Buffer.from([0xc3, 0x28, 0xff]), utf8('"}')]),
  },
  { kind: 'valid', bytes: utf8(JSON.stringify(validInput('hi', { session_id: 'pipe-edge' }))) },
];

/** The hook contract for one run: exit 0, stdout empty or a JSON object, one stderr line at most. */
function contractProblems(r: HookRun): string[] {
  const problems: string[] = [];
  if (r.timedOut) problems.push(`no exit within ${HOOK_TIMEOUT_MS} ms`);
  if (r.code !== 0) problems.push(`exit ${r.code}: ${r.stderr.slice(0, 200)}`);
  if (r.stdout !== '') {
    try {
      const out = JSON.parse(r.stdout);
      if (out === null || typeof out !== 'object' || Array.isArray(out))
        problems.push('stdout is JSON but not an object');
    } catch {
      problems.push(`stdout is not hook JSON: ${r.stdout.slice(0, 160)}`);
    }
    if (r.stderr !== '') problems.push('output and an error at once');
  }
  if (r.stderr.trimEnd().split('\n').length > 1)
    problems.push(`stderr has several lines: ${r.stderr.slice(0, 200)}`);
  if (/\n\s+at /.test(r.stderr)) problems.push('stack trace on stderr');
  return problems;
}

export interface HookFuzzReport extends FuzzReport {
  /** How many runs went through the built binary in a child process. */
  spawned: number;
}

/**
 * Hook stdin: always exit 0, stdout empty or one valid hook JSON object, stderr at most one line
 * and never a stack, and no state change (a hook only reads). Every generated input runs in this
 * process through `runHookCli`, the entry bin/sluice.js routes `sluice hook` to; every
 * `spawnEvery`-th of them (1: all, as `npm run proof:fuzz` does) and the pipe edge cases above
 * also run through the built binary (`npm run build` output, `bin/sluice.js`) in a child process.
 */
export async function fuzzHook(runs: number, seed: number, spawnEvery = 1): Promise<HookFuzzReport> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-fuzz-hook-'));
  const ctx = await openHost({ home, durability: 'normal' });
  await initHome(ctx);
  const alice = await addPrincipal(ctx, { name: 'alice', kind: 'person' });
  // alice manages bot: only an agent's managers add it to a group.
  await addPrincipal(ctx, { name: 'bot', kind: 'agent', managerId: alice.id });
  const room = (await createChannel(ctx, alice, { name: 'room', members: ['bot'] })).id;
  // Pending mail, so the inputs a hook accepts produce real output to check.
  await sendMessage(ctx, alice, { to: room, body: 'hello 😀 "quoted" \\ <tag>' });
  const failures: FuzzFailure[] = [];
  const argv = ['claude', 'user-prompt-submit', '--as', 'bot'];
  const env = { SLUICE_HOME: home, SLUICE_AS: '', SLUICE_DB: '' };
  let inputs = 0;
  let spawned = 0;
  const labelOf = (input: { kind: string; bytes: Uint8Array }) =>
    `${input.kind}: ${Buffer.from(input.bytes).toString('utf8').slice(0, 160)}`;
  const checked = async (label: string, how: string, run: () => Promise<HookRun>) => {
    const before = await stateSnapshot(ctx);
    const r = await run();
    for (const problem of contractProblems(r)) failures.push({ input: label, problem: `${how}: ${problem}` });
    if ((await stateSnapshot(ctx)) !== before)
      failures.push({ input: label, problem: `${how}: state changed` });
  };
  const spawnedRun = (input: { kind: string; bytes: Uint8Array }) => {
    spawned++;
    return checked(labelOf(input), 'binary', () => runHookProcess(home, input.bytes));
  };
  try {
    for (const input of PIPE_EDGES) await spawnedRun(input);
    await fc.assert(
      fc.asyncProperty(hookInputs, async (input) => {
        inputs++;
        await checked(labelOf(input), 'in process', () => runHookInProcess(argv, input.bytes, env));
        if ((inputs - 1) % spawnEvery === 0) await spawnedRun(input);
      }),
      { numRuns: runs, seed },
    );
  } finally {
    await ctx.store.close();
    rmSync(home, { recursive: true, force: true });
  }
  return { surface: 'hook stdin', inputs, failures, spawned };
}
