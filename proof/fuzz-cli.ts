import fc from 'fast-check';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal } from '../src/host/identity/principals.js';
import { main } from '../src/surfaces/cli/main.js';
import { runInThisProcess } from './in-process.js';
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
 * Runs the CLI's `main` in this process the way bin/sluice.js runs it in its own (see
 * runInThisProcess: argv, umask, `env` overlaid with undefined unsetting, stdin the bytes of
 * `input`, output captured, everything restored). One run at a time.
 */
export async function runCliInProcess(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
  input: string | Uint8Array = '',
): Promise<InProcessRun> {
  const run = await runInThisProcess(() => main(['node', 'sluice', ...args]), {
    argv: ['sluice', ...args],
    env,
    input,
  });
  return { code: run.code, stdout: run.stdout, stderr: run.stderr.toString('utf8') };
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
    // Assigning undefined would store the string 'undefined': an unset variable is deleted again.
    for (const [name, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await ctx.store.close();
  }
  return { surface: 'cli argv', inputs, failures };
}
