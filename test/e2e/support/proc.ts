// Bounded child processes for e2e tests: every child runs in its own process group so a
// timeout (or close()) kills the whole tree (client + MCP servers + hook scripts + shells).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
}

export interface RunOptions {
  cwd?: string;
  env: NodeJS.ProcessEnv;
  /** Written to stdin, then stdin is closed. Omit to close stdin immediately. */
  input?: string;
  timeoutMs?: number;
}

/** Kill a child's whole process group (it was spawned detached, so its pid is the pgid). */
export function killTree(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

export function runBounded(cmd: string, args: string[], opts: RunOptions): Promise<RunResult> {
  const started = Date.now();
  const timeoutMs = opts.timeoutMs ?? 120_000;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.stdin!.on('error', () => {});
    child.stdin!.end(opts.input ?? '');
    const timer = setTimeout(() => {
      timedOut = true;
      killTree(child, 'SIGKILL');
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // Reap stragglers left in the group (background shells, MCP servers).
      killTree(child, 'SIGKILL');
      resolve({ code, signal, stdout, stderr, durationMs: Date.now() - started, timedOut });
    });
  });
}

/** Line-oriented long-lived child (stream-json / JSON-RPC over stdio). */
export interface LineProcess {
  child: ChildProcess;
  /** Every parsed stdout line so far (non-JSON lines are kept as `{ _raw: line }`). */
  lines: any[];
  stderr(): string;
  write(obj: unknown): void;
  /** Resolve with the first line (already seen or future) matching `pred`. */
  waitFor(pred: (line: any) => boolean, timeoutMs?: number, fromIndex?: number): Promise<any>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  close(): Promise<void>;
}

export function startLineProcess(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env: NodeJS.ProcessEnv; hardTimeoutMs?: number },
): LineProcess {
  const child = spawn(cmd, args, {
    cwd: opts.cwd,
    env: opts.env,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: any[] = [];
  let err = '';
  let buf = '';
  const waiters: { pred: (l: any) => boolean; resolve: (l: any) => void }[] = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    let i = buf.indexOf('\n');
    while (i >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      i = buf.indexOf('\n');
      if (!line) continue;
      let obj: any;
      try {
        obj = JSON.parse(line);
      } catch {
        obj = { _raw: line };
      }
      lines.push(obj);
      for (const w of [...waiters])
        if (w.pred(obj)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(obj);
        }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  child.stdin!.on('error', () => {});
  const hard = setTimeout(() => killTree(child), opts.hardTimeoutMs ?? 300_000);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(hard);
      killTree(child);
      resolve({ code, signal });
    });
  });
  return {
    child,
    lines,
    stderr: () => err,
    write(obj) {
      child.stdin!.write(`${JSON.stringify(obj)}\n`);
    },
    waitFor(pred, timeoutMs = 60_000, fromIndex = 0) {
      const seen = lines.slice(fromIndex).find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = {
          pred,
          resolve: (l: any) => {
            clearTimeout(t);
            resolve(l);
          },
        };
        const t = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(
            new Error(`timed out after ${timeoutMs}ms waiting for a line; stderr tail: ${err.slice(-2000)}`),
          );
        }, timeoutMs);
        waiters.push(w);
      });
    },
    exited,
    async close() {
      try {
        child.stdin!.end();
      } catch {
        // ignore
      }
      const done = await Promise.race([
        exited.then(() => true),
        new Promise((r) => setTimeout(() => r(false), 3000)),
      ]);
      if (!done) killTree(child, 'SIGKILL');
      await exited;
    },
  };
}

/** A minimal environment: never leak the host's credentials or client config into a test run. */
export function baseEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  // The client's temporary files (Claude Code's claude-<uid>/ and cc-socks/, Codex's sandbox mount
  // targets) go inside its throwaway home, removed with it, not into the run's shared folder.
  const tmp = join(home, '.tmp');
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    USER: process.env.USER ?? 'root',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    TMPDIR: tmp,
  };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}
