import fc from 'fast-check';
import { initHome, openHost } from '../src/host/home.js';
import { addPrincipal } from '../src/host/principals.js';
import { main } from '../src/surfaces/cli/main.js';
import { stateSnapshot } from './state-snapshot.js';

export interface FuzzFailure {
  input: string;
  problem: string;
}

export interface FuzzReport {
  surface: string;
  inputs: number;
  failures: FuzzFailure[];
}

const hostile = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '-',
    '--',
    '#',
    '#nope',
    'bot',
    'owner',
    '😀',
    '\u0000',
    '\ud800',
    '../../etc/passwd',
    '%s%n',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 2000 }).map((s) => s.repeat(5)),
  fc.constantFrom('-1', '0', '1e309', '99999999999999999999', 'NaN', '3.5', '0x10'),
);

const commands: fc.Arbitrary<string[]> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom('message'),
      fc.constantFrom('send', 'ls', 'read', 'reply', 'archive', 'bogus'),
      fc.array(hostile, { maxLength: 4 }),
    )
    .map(([a, b, rest]) => [a, b, ...rest]),
  fc
    .tuple(
      fc.constantFrom('message ls', 'delivery', 'channel history', 'queue ls'),
      fc.constantFrom('--limit', '--max-messages', '--max-bytes', '--since', '--from', '--for'),
      hostile,
    )
    .map(([c, flag, v]) => [...c.split(' '), flag, v]),
  fc
    .tuple(
      fc.constantFrom(
        'agent add',
        'person add',
        'channel create',
        'token',
        'turn end',
        'queue resume',
        'queue withdraw',
        'queue pause',
      ),
      fc.array(hostile, { minLength: 0, maxLength: 3 }),
    )
    .map(([c, rest]) => [...c.split(' '), ...rest]),
  fc.array(hostile, { minLength: 1, maxLength: 5 }),
);

/** What one in-process CLI run wrote and how it exited; stdout is kept as the exact bytes written. */
export interface InProcessRun {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/**
 * Runs the CLI in this process with `env` overlaid on process.env (restored afterwards), capturing
 * the bytes it writes and its exit code.
 */
export async function runCliInProcess(
  args: string[],
  env: Record<string, string> = {},
): Promise<InProcessRun> {
  const out: Buffer[] = [];
  let stderr = '';
  const write = process.stdout.write.bind(process.stdout);
  const writeErr = process.stderr.write.bind(process.stderr);
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    out.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk));
    const cb = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
    cb?.();
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  process.exitCode = 0;
  try {
    await main(['node', 'sluice', ...args]);
  } finally {
    process.stdout.write = write;
    process.stderr.write = writeErr;
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  const code = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { code, stdout: Buffer.concat(out), stderr };
}

/**
 * CLI argv fuzzing: every input ends with exit 0, 1 or 2; a non-zero exit prints exactly one line,
 * never a stack trace, and changes nothing.
 */
export async function fuzzCli(home: string, runs: number, seed: number): Promise<FuzzReport> {
  const ctx = await openHost({ home, durability: 'normal' });
  await initHome(ctx);
  await addPrincipal(ctx, { name: 'bot', kind: 'agent' });
  const failures: FuzzFailure[] = [];
  let inputs = 0;
  const previous = { SLUICE_HOME: process.env.SLUICE_HOME, SLUICE_AS: process.env.SLUICE_AS };
  process.env.SLUICE_HOME = home;
  try {
    await fc.assert(
      fc.asyncProperty(commands, fc.constantFrom<string[]>([], ['--as', 'bot']), async (args, as) => {
        const argv = [...as, ...args].filter((a) => a !== '-' && a !== '-m');
        inputs++;
        const before = await stateSnapshot(ctx);
        const r = await runCliInProcess(argv);
        const input = JSON.stringify(argv).slice(0, 300);
        if (![0, 1, 2].includes(r.code))
          failures.push({ input, problem: `exit ${r.code}: ${r.stderr.slice(0, 300)}` });
        if (r.code !== 0) {
          const lines = r.stderr.trimEnd().split('\n');
          if (lines.length !== 1 && !r.stderr.includes('Usage:'))
            failures.push({ input, problem: `stderr has ${lines.length} lines` });
          if (/\n\s+at /.test(r.stderr)) failures.push({ input, problem: 'stack trace on stderr' });
          if (!/^sluice: /.test(r.stderr) && !r.stderr.includes('Usage:'))
            failures.push({ input, problem: `unclear error: ${r.stderr.slice(0, 200)}` });
          if ((await stateSnapshot(ctx)) !== before)
            failures.push({ input, problem: 'state changed on a rejected input' });
        }
      }),
      { numRuns: runs, seed },
    );
  } finally {
    process.env.SLUICE_HOME = previous.SLUICE_HOME;
    if (previous.SLUICE_AS === undefined) delete process.env.SLUICE_AS;
    await ctx.store.close();
  }
  return { surface: 'cli argv', inputs, failures };
}
