// Running one of the CLI's entry points inside this process, the way bin/sluice.js runs it in its
// own: the one mechanism behind the in-process CLI and hook runners (tests and campaigns that need
// many runs). It imports nothing from Sluice, so a runner keeps only its entry point's graph.
import { Readable, Writable } from 'node:stream';

/** What one in-process run wrote and the exit code it set; the output is the exact bytes written. */
export interface InProcessOutput {
  code: number;
  stdout: Buffer;
  stderr: Buffer;
}

/** A stream that keeps every byte written to it (a pipe, not a terminal: no isTTY, no columns). */
function capture(): { stream: Writable; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { stream, bytes: () => Buffer.concat(chunks) };
}

function overlayEnv(values: Record<string, string | undefined>): void {
  // Assigning undefined would store the string 'undefined': an unset variable is deleted.
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

let running = false;

/**
 * Runs `entry` with this process set up as the launcher sets up its own: umask 077 (the user's
 * recorded in SLUICE_USER_UMASK), `env` overlaid on process.env (undefined unsets), `argv` after
 * the node path when given, stdin the bytes of `input` in one chunk (empty: an ended stream), and
 * fresh stdout/stderr streams that capture what is written. Everything is restored afterwards —
 * environment, argv, umask, the standard streams, process.exitCode and any crash listeners the
 * entry added (main's exit the process) — so runs do not see each other. One run at a time.
 */
export async function runInThisProcess(
  entry: () => Promise<unknown>,
  options: {
    argv?: readonly string[];
    env?: Record<string, string | undefined>;
    input?: string | Uint8Array;
  } = {},
): Promise<InProcessOutput> {
  if (running) throw new Error('runInThisProcess: one run at a time (it swaps process-wide state)');
  running = true;
  const out = capture();
  const err = capture();
  const umask = process.umask(0o077);
  const overlay = { SLUICE_USER_UMASK: process.env.SLUICE_USER_UMASK ?? umask.toString(8), ...options.env };
  const savedEnv = Object.fromEntries(Object.keys(overlay).map((k) => [k, process.env[k]]));
  const savedArgv = process.argv;
  const savedExitCode = process.exitCode;
  const streams = ['stdin', 'stdout', 'stderr'] as const;
  const savedStreams = streams.map((name) => Object.getOwnPropertyDescriptor(process, name));
  const savedCrash = process.listeners('uncaughtException');
  const savedRejection = process.listeners('unhandledRejection');
  const input = options.input ?? '';
  const stdin = Readable.from(input.length === 0 ? [] : [Buffer.from(input)]);
  const replacements = { stdin, stdout: out.stream, stderr: err.stream };
  for (const name of streams)
    Object.defineProperty(process, name, { value: replacements[name], configurable: true, enumerable: true });
  overlayEnv(overlay);
  if (options.argv) process.argv = [savedArgv[0] ?? process.execPath, ...options.argv];
  process.exitCode = undefined;
  let code: number;
  try {
    await entry();
  } finally {
    code = Number(process.exitCode ?? 0);
    process.umask(umask);
    process.exitCode = savedExitCode;
    process.argv = savedArgv;
    overlayEnv(savedEnv);
    streams.forEach((name, i) => {
      const descriptor = savedStreams[i];
      if (descriptor) Object.defineProperty(process, name, descriptor);
    });
    for (const listener of process.listeners('uncaughtException'))
      if (!savedCrash.includes(listener)) process.off('uncaughtException', listener);
    for (const listener of process.listeners('unhandledRejection'))
      if (!savedRejection.includes(listener)) process.off('unhandledRejection', listener);
    stdin.destroy();
    running = false;
  }
  return { code, stdout: out.bytes(), stderr: err.bytes() };
}
