import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { SLUICE_BIN } from '../support/host.js';

/** A `sluice serve` child process on a shared database. */
export interface ServeProcess {
  url: string;
  proc: ChildProcess;
  stderr(): string;
  /** How it ended, or undefined while it runs: a dead host explains its clients' `fetch failed`. */
  exitStatus(): string | undefined;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL (a crash) and wait for exit. */
  kill(): Promise<void>;
}

/** Starts `sluice serve --port 0` (built CLI: run `npm run build` first) and waits for its URL. */
export function startServe(options: { home: string; db: string | undefined }): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
    env: {
      ...process.env,
      SLUICE_HOME: options.home,
      SLUICE_DB: options.db ?? '',
      SLUICE_AS: '',
      SLUICE_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stopWith = async (signal: NodeJS.Signals) => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    await exited;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`serve did not start in 20 s: ${err.slice(0, 2000)}`)),
      20_000,
    );
    proc.stderr?.on('data', (d: Buffer) => {
      err += d.toString('utf8');
    });
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const match = /Sluice is serving (http:\/\/\S+)/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({
          url: match[1],
          proc,
          stderr: () => err,
          exitStatus: () =>
            proc.exitCode === null && proc.signalCode === null
              ? undefined
              : `exit ${proc.exitCode ?? proc.signalCode}; stderr: ${err.slice(-2000) || '(empty)'}`,
          stop: () => stopWith('SIGTERM'),
          kill: () => stopWith('SIGKILL'),
        });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      // An internal error's details are in the home's error log, which the test removes after.
      let details = '';
      try {
        details = readFileSync(join(options.home, 'logs', 'errors.log'), 'utf8').slice(-3000);
      } catch {
        // No error log.
      }
      reject(new Error(`serve exited (${code}) before serving: ${err.slice(0, 2000)}${details}`));
    });
  });
}

export class RpcError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One JSON-RPC call over HTTP POST /rpc with a bearer token. A failure says what failed: the
 * connection (`fetch failed` with its cause's code), the HTTP status, or the error's code.
 */
export async function rpc<T>(url: string, token: string, method: string, params: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${url}/rpc`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new RpcError('connection', `${String(err)} (${cause?.code ?? cause?.message ?? 'no cause'})`);
  }
  const text = await response.text();
  let reply: { result?: T; error?: { message?: string; code?: string; data?: { code?: string } } };
  try {
    reply = JSON.parse(text);
  } catch {
    throw new RpcError('http', `HTTP ${response.status}: ${text.slice(0, 200)}`);
  }
  if (reply.error)
    throw new RpcError(
      reply.error.data?.code ?? reply.error.code ?? 'rpc',
      `${reply.error.data?.code ?? reply.error.code ?? 'rpc'} (HTTP ${response.status}): ${reply.error.message ?? ''}`,
    );
  return reply.result as T;
}

/**
 * Runs one call at a time. The test process stands in for several agent-side processes, but its
 * SQLite connections share one thread: a transaction that waits for the write lock blocks that
 * thread (better-sqlite3 is synchronous), so if another of its own connections holds the lock the
 * thread stalls for the whole busy timeout and fails with SQLITE_BUSY. Real agent processes each
 * have a thread of their own; here their store calls take turns instead.
 */
export function serialized(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>) => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** A WebSocket JSON-RPC subscriber that records every notification it receives. */
export interface Subscriber {
  notifications: { method: string; params: unknown }[];
  /** Every string found anywhere in the notifications (message ids among them). */
  strings(): Set<string>;
  close(): void;
}

export async function subscribe(
  url: string,
  token: string,
  params: { queues?: string[]; channels?: string[] },
): Promise<Subscriber> {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/rpc`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const notifications: { method: string; params: unknown }[] = [];
  let pending: ((value: unknown) => void) | undefined;
  // What a real client does on `channel.resync` (the host collapsed a backed-up socket's channel
  // events, docs/rpc.md): re-read the channel's history, page by page. A loaded test process reads
  // its socket slowly enough for that to happen; the pages are recorded like notifications.
  let historyCalls = 0;
  const readHistory = (channelId: string, cursor?: string) =>
    socket.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: `history:${historyCalls++}:${channelId}`,
        method: 'channel.history',
        params: { channelId, size: 200, ...(cursor ? { cursor } : {}) },
      }),
    );
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as {
      id?: unknown;
      method?: string;
      params?: unknown;
      result?: { nextCursor?: string | null; hasMore?: boolean };
    };
    if (frame.method) {
      notifications.push({ method: frame.method, params: frame.params });
      const resync = frame.params as { channelId?: unknown } | undefined;
      if (frame.method === 'channel.resync' && typeof resync?.channelId === 'string')
        readHistory(resync.channelId);
    } else if (frame.id === 'sub') pending?.(frame);
    else if (typeof frame.id === 'string' && frame.id.startsWith('history:')) {
      notifications.push({ method: 'channel.history (after resync)', params: frame.result });
      const channelId = frame.id.split(':').slice(2).join(':');
      if (frame.result?.hasMore && frame.result.nextCursor) readHistory(channelId, frame.result.nextCursor);
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const reply = await new Promise<unknown>((resolve) => {
    pending = resolve;
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 'sub', method: 'subscribe', params }));
  });
  if ((reply as { error?: unknown }).error) throw new Error(`subscribe failed: ${JSON.stringify(reply)}`);
  const collect = (value: unknown, into: Set<string>) => {
    if (typeof value === 'string') into.add(value);
    else if (Array.isArray(value)) for (const v of value) collect(v, into);
    else if (value && typeof value === 'object') for (const v of Object.values(value)) collect(v, into);
  };
  return {
    notifications,
    strings() {
      const into = new Set<string>();
      collect(notifications, into);
      return into;
    },
    close: () => socket.close(),
  };
}
