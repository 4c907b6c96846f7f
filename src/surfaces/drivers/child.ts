import { spawn } from 'node:child_process';

/** A long-lived client process that speaks one JSON value per line on stdio. */
export interface JsonLineChild {
  readonly pid: number | undefined;
  send(value: unknown): void;
  /** Calls `fn` for every JSON line from now on; returns the unsubscribe function. */
  onLine(fn: (value: unknown) => void): () => void;
  /** Settles when the process has exited (never rejects). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last few KB of stderr, for a one-line failure report. */
  stderrTail(): string;
  /**
   * Closes stdin, waits briefly, then kills: the gentle stop of an idle client, which ends on its
   * own when its input ends.
   */
  stop(graceMs?: number): Promise<void>;
  /**
   * Ends the process at once (SIGTERM, SIGKILL after `graceMs`), its stdin left open: a client in
   * the middle of a turn reads a closed stdin as a cancelled prompt and goes on with the turn.
   */
  kill(graceMs?: number): Promise<void>;
}

const STDERR_TAIL = 4096;

/**
 * The line of a client's stderr that says why it stopped: the last non-empty line before a Rust
 * `Stack backtrace:` (Codex prints one under its `Error: …` line), skipping stack frames and
 * terminal colour codes.
 */
export function stderrReason(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: strips ANSI colour codes
  const lines = text.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '').split(/\r?\n/);
  const backtrace = lines.findIndex((l) => /^\s*Stack backtrace:/.test(l));
  const kept = (backtrace >= 0 ? lines.slice(0, backtrace) : lines)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^at\s/.test(l) && !/^\d+:\s/.test(l));
  return (kept.at(-1) ?? '').slice(0, 300);
}

/** One line for a client that exited: `NAME exited (code 1): <its stderr line>`. */
export function exitLine(
  name: string,
  exit: { code: number | null; signal: NodeJS.Signals | null },
  stderr: string,
): string {
  const why = stderrReason(stderr);
  return `${name} exited (${exit.signal ?? `code ${exit.code}`})${why ? `: ${why}` : ' with nothing on stderr'}`;
}

/**
 * Sluice runs with umask 077 (bin/sluice.js), but the agent client it starts writes the user's
 * project files: it gets the user's own umask back. The child inherits the mask at spawn time,
 * which is synchronous, so the process mask is restored right after.
 */
function withUserUmask<T>(start: () => T): T {
  const user = Number.parseInt(process.env.SLUICE_USER_UMASK ?? '', 8);
  if (!Number.isInteger(user) || user < 0 || user > 0o777) return start();
  const own = process.umask(user);
  try {
    return start();
  } finally {
    process.umask(own);
  }
}

/**
 * Starts `command` with piped stdio. The child stays in the driver's process group, so killing
 * the driver's group takes the client (and its MCP servers) with it.
 */
export function startJsonLineChild(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): JsonLineChild {
  const child = withUserUmask(() =>
    spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  const listeners = new Set<(value: unknown) => void>();
  let buffer = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        continue; // clients print the odd non-JSON banner; it carries nothing we settle on
      }
      for (const fn of [...listeners]) fn(value);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL);
  });
  child.stdin.on('error', () => {
    // the child went away; `exited` reports it
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('error', (err) => {
      stderr += `\n${err.message}`;
      resolve({ code: null, signal: null });
    });
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  const kill = async (graceMs = 3000) => {
    child.kill('SIGTERM');
    const gone = await Promise.race([exited.then(() => true), delay(graceMs).then(() => false)]);
    if (!gone) child.kill('SIGKILL');
    await exited;
  };
  return {
    pid: child.pid,
    send(value) {
      child.stdin.write(`${JSON.stringify(value)}\n`);
    },
    onLine(fn) {
      listeners.add(fn);
      return () => {
        listeners.delete(fn);
      };
    },
    exited,
    stderrTail: () => stderr,
    async stop(graceMs = 3000) {
      child.stdin.end();
      const done = await Promise.race([exited.then(() => true), delay(graceMs).then(() => false)]);
      if (!done) await kill(graceMs);
      await exited;
    },
    kill,
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
