// A small JSON-RPC 2.0 client over one WebSocket: numbered requests, notifications, reconnect with
// jittered backoff, and subscriptions that are re-sent after every reconnect (the host keeps them per
// socket). No DOM types here, so the same module runs under Node in the tests.

import type { LiveMethod, LiveNotifications } from './wire.js';

/** The part of a WebSocket this client uses; the browser's WebSocket and the `ws` package both fit. */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code?: number }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

/** A JSON-RPC error reply, or a local failure (`disconnected`, `timeout`, `closed`). */
export class RpcError extends Error {
  constructor(
    readonly code: number | 'disconnected' | 'timeout' | 'closed',
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/**
 * `stalled`: the socket is open but the host has not answered the heartbeat in time (a frozen or
 * overloaded host, a connection silently gone); it turns `open` again at the host's next frame.
 */
export type ConnectionStatus = 'connecting' | 'open' | 'stalled' | 'reconnecting' | 'closed';

export interface RpcClientOptions {
  url: string;
  connect: (url: string) => SocketLike;
  /** First reconnect delay; doubles per failed attempt up to `maxDelayMs`, with jitter. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** A request with no reply by then is rejected with `timeout`. */
  requestTimeoutMs?: number;
  /** Returns [0, 1); the tests pass a fixed one. */
  random?: () => number;
  /**
   * The heartbeat: after this long without a frame from the host the client asks it something
   * cheap (`host.hello`); 0 turns it off. The browser's WebSocket cannot send protocol pings.
   */
  heartbeatMs?: number;
  /** A heartbeat question unanswered this long reads as `stalled`. */
  stallAfterMs?: number;
  /** Unanswered this long: the socket is given up and a new one opened (a half-open TCP never closes). */
  dropAfterMs?: number;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: RpcError) => void;
  timer: ReturnType<typeof setTimeout>;
}

interface Queued {
  frame: { id: number; method: string; params: unknown };
  pending: Pending;
}

const OPEN = 1;
/** The close code the host sends when a principal already has its most WebSockets open. */
export const WS_REFUSED_AT_CAP = 4429;

/** The delay before reconnect attempt `attempt` (0-based): exponential, capped, jittered to [50%, 100%]. */
export function backoffDelay(
  attempt: number,
  initialMs: number,
  maxMs: number,
  random: () => number,
): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling * (0.5 + random() / 2));
}

export class RpcClient {
  private socket: SocketLike | null = null;
  private nextId = 1;
  private attempt = 0;
  private everOpened = false;
  private stopped = false;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly inFlight = new Map<number, Pending>();
  private readonly outbox: Queued[] = [];
  private readonly handlers = new Map<string, Set<(params: unknown) => void>>();
  private readonly statusListeners = new Set<(status: ConnectionStatus) => void>();
  private readonly openListeners = new Set<(reconnected: boolean) => void>();
  private readonly subscriptions = new Map<string, number>();
  private currentStatus: ConnectionStatus = 'connecting';
  private readonly options: Required<RpcClientOptions>;
  /** When the open socket last brought a frame (or opened). */
  private lastHeardAt = 0;
  /** When the last heartbeat question went out: one per `heartbeatMs` at most. */
  private lastProbeAt = 0;
  /** When the first heartbeat question still without any frame since went out; null: none waits. */
  private unansweredSince: number | null = null;
  private heartbeatTimer: ReturnType<typeof setInterval> | null = null;

  constructor(options: RpcClientOptions) {
    this.options = {
      initialDelayMs: 500,
      maxDelayMs: 15_000,
      requestTimeoutMs: 30_000,
      random: Math.random,
      heartbeatMs: 2_500,
      stallAfterMs: 2_500,
      dropAfterMs: 30_000,
      ...options,
    };
  }

  get status(): ConnectionStatus {
    return this.currentStatus;
  }

  /** Opens the socket; reconnects on its own until `close()`. */
  start(): void {
    this.stopped = false;
    this.open();
  }

  /** Stops reconnecting, closes the socket and rejects whatever is waiting. */
  close(): void {
    this.stopped = true;
    this.stopHeartbeat();
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.socket?.close(1000, 'client closed');
    this.socket = null;
    this.failAll('closed', 'the connection was closed');
    this.setStatus('closed');
  }

  /**
   * Sends a request. While the socket is down the request waits in order for the next connection;
   * a request already sent when the socket drops is rejected with `disconnected` (it may or may not
   * have run, so it is never replayed behind the caller's back).
   */
  call<T>(method: string, params: unknown = {}): Promise<T> {
    if (this.stopped && this.currentStatus === 'closed') {
      return Promise.reject(new RpcError('closed', 'the connection was closed'));
    }
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = {
        resolve: resolve as (value: unknown) => void,
        reject,
        timer: setTimeout(() => {
          this.inFlight.delete(id);
          const queuedAt = this.outbox.findIndex((q) => q.frame.id === id);
          if (queuedAt >= 0) this.outbox.splice(queuedAt, 1);
          reject(new RpcError('timeout', `${method}: no reply within ${this.options.requestTimeoutMs} ms`));
        }, this.options.requestTimeoutMs),
      };
      const frame = { id, method, params };
      if (this.socket && this.socket.readyState === OPEN) this.transmit(frame, pending);
      else this.outbox.push({ frame, pending });
    });
  }

  /**
   * Calls `handler` for every notification named `method`; returns the disposer. The params are
   * typed by the host's own map of them (src/core/wire/live.ts), not cast by each handler.
   */
  on<M extends LiveMethod>(method: M, handler: (params: LiveNotifications[M]) => void): () => void {
    let set = this.handlers.get(method);
    if (!set) {
      set = new Set();
      this.handlers.set(method, set);
    }
    // Dispatch finds handlers by the frame's method, so each one gets its own method's params.
    const untyped = handler as (params: unknown) => void;
    set.add(untyped);
    return () => set.delete(untyped);
  }

  onStatus(listener: (status: ConnectionStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  /** Called after each successful open; `reconnected` is true from the second one on (views refetch). */
  onOpen(listener: (reconnected: boolean) => void): () => void {
    this.openListeners.add(listener);
    return () => this.openListeners.delete(listener);
  }

  /**
   * Subscribes (`subscribe` with these params) and keeps the subscription across reconnects;
   * the returned disposer unsubscribes. Identical params are reference-counted.
   */
  subscribe(params: { queues?: string[]; channels?: string[]; channelList?: boolean }): () => void {
    const key = JSON.stringify(params);
    const count = this.subscriptions.get(key) ?? 0;
    this.subscriptions.set(key, count + 1);
    if (count === 0 && this.isOpen()) this.call('subscribe', params).catch(() => {});
    let disposed = false;
    return () => {
      if (disposed) return;
      disposed = true;
      const left = (this.subscriptions.get(key) ?? 1) - 1;
      if (left > 0) {
        this.subscriptions.set(key, left);
        return;
      }
      this.subscriptions.delete(key);
      if (this.isOpen()) this.call('unsubscribe', params).catch(() => {});
    };
  }

  private open(): void {
    this.setStatus(this.everOpened ? 'reconnecting' : 'connecting');
    let socket: SocketLike;
    try {
      socket = this.options.connect(this.options.url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    const attemptsBefore = this.attempt;
    socket.onopen = () => {
      if (this.socket !== socket) return;
      const reconnected = this.everOpened;
      this.everOpened = true;
      this.attempt = 0;
      this.setStatus('open');
      this.startHeartbeat(socket);
      for (const key of this.subscriptions.keys()) this.call('subscribe', JSON.parse(key)).catch(() => {});
      for (const queued of this.outbox.splice(0)) this.transmit(queued.frame, queued.pending);
      for (const listener of this.openListeners) listener(reconnected);
    };
    socket.onmessage = (event) => {
      if (this.socket !== socket) return;
      this.heard();
      this.receive(event.data);
    };
    socket.onerror = () => {
      // The close event follows and drives the reconnect.
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      // The host took the socket only to refuse it (too many open for this principal): that open
      // was no success, so the backoff keeps growing instead of hammering the host at its first delay.
      if (event.code === WS_REFUSED_AT_CAP) this.attempt = attemptsBefore;
      this.lose(socket);
    };
  }

  /** The socket is gone (closed, or given up on): fail what it carried and open another. */
  private lose(socket: SocketLike): void {
    if (this.socket !== socket) return;
    this.socket = null;
    this.stopHeartbeat();
    this.failInFlight();
    if (!this.stopped) this.scheduleReconnect();
  }

  /** Open, whether or not the host answers right now. */
  private isOpen(): boolean {
    return this.currentStatus === 'open' || this.currentStatus === 'stalled';
  }

  private heard(): void {
    this.lastHeardAt = Date.now();
    this.unansweredSince = null;
    if (this.currentStatus === 'stalled') this.setStatus('open');
  }

  /**
   * While the socket is open: whenever it has been quiet for `heartbeatMs`, ask the host something
   * cheap; a question unanswered (no frame at all since) for `stallAfterMs` reads `stalled` (the
   * top bar stops saying "live"), for `dropAfterMs` gives the socket up and reconnects. Only an
   * unanswered question counts, never plain quiet: a background tab's timers may fire a minute
   * apart, and a quiet host that answers at once is live.
   */
  private startHeartbeat(socket: SocketLike): void {
    this.stopHeartbeat();
    this.lastHeardAt = Date.now();
    this.unansweredSince = null;
    const { heartbeatMs, stallAfterMs, dropAfterMs } = this.options;
    if (heartbeatMs <= 0) return;
    const ask = () => {
      this.lastProbeAt = Date.now();
      this.unansweredSince ??= this.lastProbeAt;
      this.call('host.hello', {}).catch(() => {});
    };
    this.heartbeatTimer = setInterval(
      () => {
        if (this.socket !== socket) return;
        const now = Date.now();
        if (this.unansweredSince === null) {
          if (now - this.lastHeardAt >= heartbeatMs) ask();
          return;
        }
        const waited = now - this.unansweredSince;
        if (waited >= dropAfterMs) {
          socket.close(4000, 'the host stopped answering');
          this.lose(socket);
          return;
        }
        if (waited >= stallAfterMs) this.setStatus('stalled');
        // Asked again each heartbeat while unanswered: a host may drop one question, not every one.
        if (now - this.lastProbeAt >= heartbeatMs) ask();
      },
      // Often enough that a stall shows within about half a heartbeat of `stallAfterMs`.
      Math.max(50, Math.min(heartbeatMs, stallAfterMs) / 2),
    );
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer !== null) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.setStatus(this.everOpened ? 'reconnecting' : 'connecting');
    const delay = backoffDelay(
      this.attempt++,
      this.options.initialDelayMs,
      this.options.maxDelayMs,
      this.options.random,
    );
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.open();
    }, delay);
  }

  private transmit(frame: Queued['frame'], pending: Pending): void {
    this.inFlight.set(frame.id, pending);
    try {
      this.socket?.send(JSON.stringify({ jsonrpc: '2.0', ...frame }));
    } catch {
      this.inFlight.delete(frame.id);
      clearTimeout(pending.timer);
      pending.reject(new RpcError('disconnected', `${frame.method}: the connection dropped`));
    }
  }

  private receive(data: unknown): void {
    let message: unknown;
    try {
      message = JSON.parse(typeof data === 'string' ? data : String(data));
    } catch {
      return;
    }
    for (const item of Array.isArray(message) ? message : [message]) this.dispatch(item);
  }

  private dispatch(item: unknown): void {
    if (typeof item !== 'object' || item === null) return;
    const frame = item as {
      id?: unknown;
      method?: unknown;
      params?: unknown;
      result?: unknown;
      error?: unknown;
    };
    if (typeof frame.method === 'string' && frame.id === undefined) {
      for (const handler of this.handlers.get(frame.method) ?? []) handler(frame.params);
      return;
    }
    if (typeof frame.id !== 'number') return;
    const pending = this.inFlight.get(frame.id);
    if (!pending) return;
    this.inFlight.delete(frame.id);
    clearTimeout(pending.timer);
    if (frame.error && typeof frame.error === 'object') {
      const error = frame.error as { code?: unknown; message?: unknown; data?: unknown };
      pending.reject(
        new RpcError(
          typeof error.code === 'number' ? error.code : -32603,
          typeof error.message === 'string' ? error.message : 'request failed',
          error.data,
        ),
      );
      return;
    }
    pending.resolve(frame.result);
  }

  private failInFlight(
    code: 'disconnected' | 'closed' = 'disconnected',
    message = 'the connection dropped before the reply',
  ): void {
    for (const [id, pending] of this.inFlight) {
      this.inFlight.delete(id);
      clearTimeout(pending.timer);
      pending.reject(new RpcError(code, message));
    }
  }

  private failAll(code: 'closed', message: string): void {
    this.failInFlight(code, message);
    for (const queued of this.outbox.splice(0)) {
      clearTimeout(queued.pending.timer);
      queued.pending.reject(new RpcError(code, message));
    }
  }

  private setStatus(status: ConnectionStatus): void {
    if (status === this.currentStatus) return;
    this.currentStatus = status;
    for (const listener of this.statusListeners) listener(status);
  }
}

/** The host's one-word error code (`denied`, `not_found`, …) of a failed call, if it gave one. */
export function errorCode(error: unknown): string | null {
  if (!(error instanceof RpcError) || typeof error.data !== 'object' || error.data === null) return null;
  const code = (error.data as { code?: unknown }).code;
  return typeof code === 'string' ? code : null;
}

/** A one-line description of an RPC failure for the page, with the host's `data.code` when it sent one. */
export function describeError(error: unknown): string {
  if (error instanceof RpcError) return `${error.message} (${errorCode(error) ?? String(error.code)})`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * A failure worth trying again by itself: no reply in time, or the socket dropped. (A refusal such as
 * `denied` is an answer, not a failure.) A view that shows a stuck error after one slow reply on a
 * loaded machine is a dead end.
 */
export function isTransient(error: unknown): boolean {
  return error instanceof RpcError && (error.code === 'timeout' || error.code === 'disconnected');
}

/** How long a view waits before it asks again after a transient failure. */
export const RETRY_AFTER_MS = 2_000;
