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
  /**
   * Everything a failed test should print about this host: alive or how and when it ended, its
   * event loop's worst lag and last beat (loop-lag-probe.mjs), the tail of its stderr and of its
   * home's error log (where a crash's stack goes; the test removes the home after).
   */
  diagnosis(): string;
  /** SIGTERM and wait for exit (SIGKILL if it has not exited 10 s later: a frozen host). */
  stop(): Promise<void>;
  /** SIGKILL (a crash) and wait for exit. */
  kill(): Promise<void>;
}

const PROBE = new URL('./loop-lag-probe.mjs', import.meta.url).href;
let probes = 0;

function tail(text: string, lines: number): string {
  const kept = text.trimEnd().split('\n').slice(-lines).join('\n');
  return kept === '' ? '(empty)' : kept;
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

/** Starts `sluice serve --port 0` (built CLI: run `npm run build` first) and waits for its URL. */
export function startServe(options: { home: string; db: string | undefined }): Promise<ServeProcess> {
  const lagFile = join(options.home, `loop-lag-${process.pid}-${probes++}.json`);
  const startedAt = Date.now();
  const proc = spawn(process.execPath, ['--import', PROBE, SLUICE_BIN, 'serve', '--port', '0'], {
    env: {
      ...process.env,
      SLUICE_HOME: options.home,
      SLUICE_DB: options.db ?? '',
      SLUICE_AS: '',
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_TEST_LOOP_LAG_FILE: lagFile,
      // The load's writers are people sending as fast as the hosts answer: the send rate is not
      // what these tests measure (test/http/fairness.test.ts does).
      SLUICE_HTTP_LIMITS: 'sendBurst=1000000,sendsPerMinute=1000000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let exitedAt: number | undefined;
  let servingAt: number | undefined;
  let escalated = false;
  const exited = new Promise<void>((resolve) =>
    proc.once('exit', () => {
      exitedAt = Date.now();
      resolve();
    }),
  );
  const running = () => proc.exitCode === null && proc.signalCode === null;
  const stopWith = async (signal: NodeJS.Signals) => {
    if (running()) proc.kill(signal);
    if (signal === 'SIGTERM') {
      // Cleanup only: a host whose loop is frozen never handles SIGTERM.
      const force = setTimeout(() => {
        escalated = true;
        proc.kill('SIGKILL');
      }, 10_000);
      await exited;
      clearTimeout(force);
    }
    await exited;
  };
  const exitStatus = () =>
    running()
      ? undefined
      : `exit ${proc.exitCode ?? proc.signalCode}; stderr: ${err.slice(-2000) || '(empty)'}`;
  const loopLag = () => {
    const text = readOr(lagFile, '');
    if (text === '') return 'event loop: no probe report yet';
    const lag = JSON.parse(text) as {
      maxLagMs: number;
      maxLagAtMs: number;
      lastBeat: number;
      perSecond: number[];
      stalls: [number, number][];
    };
    const stalls = lag.stalls.map(([at, ms]) => `${ms} ms ending at +${at}`).join(', ') || 'none';
    return `event loop: worst lag ${lag.maxLagMs} ms at +${lag.maxLagAtMs} ms; last beat ${exitedAt === undefined ? `${Date.now() - lag.lastBeat} ms ago` : `${exitedAt - lag.lastBeat} ms before it ended`}; worst per second, last 30 s: ${lag.perSecond.join(' ')}; stalls of 250 ms or more (since start; serving from +${servingAt === undefined ? '?' : servingAt - startedAt}): ${stalls}`;
  };
  const diagnosis = () =>
    [
      `pid ${proc.pid}, started ${new Date(startedAt).toISOString()}: ${
        running()
          ? 'running'
          : `ended by ${proc.signalCode ?? `exit code ${proc.exitCode}`} after ${(exitedAt ?? startedAt) - startedAt} ms${escalated ? ' (SIGKILLed: ignored SIGTERM for 10 s)' : ''}`
      }`,
      loopLag(),
      `stderr (last 20 lines):\n${tail(err, 20)}`,
      `errors.log (last 5 lines):\n${tail(readOr(join(options.home, 'logs', 'errors.log'), ''), 5)}`,
    ].join('\n');
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
      if (match?.[1] && servingAt === undefined) {
        servingAt = Date.now();
        clearTimeout(timer);
        resolve({
          url: match[1],
          proc,
          stderr: () => err,
          exitStatus,
          diagnosis,
          stop: () => stopWith('SIGTERM'),
          kill: () => stopWith('SIGKILL'),
        });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      // An internal error's details are in the home's error log, which the test removes after.
      const details = readOr(join(options.home, 'logs', 'errors.log'), '').slice(-3000);
      reject(new Error(`serve exited (${code}) before serving: ${err.slice(0, 2000)}${details}`));
    });
  });
}

export class RpcError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** For `connection`: the socket error's code (`ECONNREFUSED`, `UND_ERR_SOCKET`, …). */
    readonly socketCode?: string,
  ) {
    super(message);
  }
}

/**
 * Codes of a connection the host closed under a request that went out on it: a keep-alive
 * socket that sat idle past the host's 5 s keep-alive while the client's loop lagged (seen in a
 * loaded run: 6.6 s of test-process lag, then `other side closed` on a 200 KB upload). A refused
 * connection is not among them: that host is not listening.
 */
const STALE_SOCKET = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** True for a failed call whose keep-alive socket the host had already closed. */
export function staleSocket(err: unknown): boolean {
  if (err instanceof RpcError) return err.code === 'connection' && STALE_SOCKET.has(err.socketCode ?? '');
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause;
  return err instanceof TypeError && typeof cause?.code === 'string' && STALE_SOCKET.has(cause.code);
}

/**
 * Runs a call that is safe to repeat once more if its socket turned out stale while the host
 * still runs, as an HTTP client does after an idle wait; `onRetry` records it.
 */
export async function retryStaleSocket<T>(
  serve: ServeProcess,
  call: () => Promise<T>,
  onRetry: (err: unknown) => void = () => undefined,
): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!staleSocket(err) || serve.exitStatus() !== undefined) throw err;
    onRetry(err);
    return call();
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
    throw new RpcError(
      'connection',
      `${String(err)} (${cause?.code ?? cause?.message ?? 'no cause'}) calling ${method} at ${url}`,
      cause?.code,
    );
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
