// `sluice hook …` in this process, for tests and campaigns that need many hook runs: kept apart
// from the fuzz campaign so that importing it loads only the hook's own small graph.
import { Readable } from 'node:stream';
import { runHookCli } from '../src/surfaces/hooks/hook-cli.js';

export interface HookRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/**
 * Runs `sluice hook <argv>` in this process through the entry the binary routes to
 * (`runHookCli`, which bin/sluice.js calls with the process's stdin), with `input` as stdin and
 * `env` overlaid on process.env, capturing what it writes and the exit code it sets. Everything
 * patched is restored afterwards. It costs no process start-up, so it can afford many inputs; what
 * only a real process shows (the pipe, the routing in bin/sluice.js, the exit itself) is left to
 * the spawned runs.
 */
export async function runHookInProcess(
  argv: readonly string[],
  input: string | Uint8Array,
  env: Record<string, string> = {},
): Promise<HookRun> {
  let stdout = '';
  let stderr = '';
  const stdinDescriptor = Object.getOwnPropertyDescriptor(process, 'stdin');
  const write = process.stdout.write;
  const writeErr = process.stderr.write;
  const errorListeners = process.stdout.listeners('error');
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const savedExitCode = process.exitCode;
  Object.assign(process.env, env);
  // One chunk, as a pipe with the whole payload written at once would deliver it (an empty input
  // is an immediately ended stream).
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : Buffer.from(input);
  Object.defineProperty(process, 'stdin', {
    configurable: true,
    enumerable: true,
    value: Readable.from(bytes.length === 0 ? [] : [bytes]),
  });
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    stdout += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    (rest.find((r) => typeof r === 'function') as (() => void) | undefined)?.();
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    stderr += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    (rest.find((r) => typeof r === 'function') as (() => void) | undefined)?.();
    return true;
  }) as typeof process.stderr.write;
  // As bin/sluice.js does before it routes to the hook: what the hook writes is private.
  const umask = process.umask(0o077);
  process.exitCode = undefined;
  let code: number | null;
  try {
    await runHookCli(argv);
    code = process.exitCode === undefined ? 0 : Number(process.exitCode);
  } finally {
    process.umask(umask);
    if (stdinDescriptor) Object.defineProperty(process, 'stdin', stdinDescriptor);
    process.stdout.write = write;
    process.stderr.write = writeErr;
    // runHookCli guards the real stdout against EPIPE with a listener: one per call here.
    for (const l of process.stdout.listeners('error'))
      if (!errorListeners.includes(l)) process.stdout.off('error', l as (...a: unknown[]) => void);
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    process.exitCode = savedExitCode;
  }
  return { code, stdout, stderr, timedOut: false };
}
