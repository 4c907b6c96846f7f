import pg from 'pg';
import type { WatchChanges } from '../store.js';
import { EVENTS_CHANNEL } from './migrations.js';

export interface ListenerOptions {
  /** Connection settings for the dedicated LISTEN client (never a pooled one). */
  clientConfig: pg.ClientConfig;
  /** Only notifications from this schema count: several stores may share one database. */
  schema: string;
  /** First reconnect delay (±50 % jitter); doubles up to `maxBackoffMs` (default 2 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Called when the connection drops (for logs); the listener keeps reconnecting. */
  onError?: (err: Error) => void;
  /**
   * Whether committed events still wait behind an older transaction (postgres/commit-order.ts).
   * Asked after each notification; while true, watchers are told again (after `recheckMs`, then backing off).
   */
  heldBack?: () => Promise<boolean>;
  /** The first re-check delay; it doubles while events stay held back, up to a second. */
  recheckMs?: number;
}

const MAX_RECHECK_MS = 1_000;

/** A LISTEN connection shared by every watcher of one store. */
export interface EventListener {
  watchChanges: WatchChanges;
  close(): Promise<void>;
}

/**
 * Watches commits from every process through the `events` trigger's NOTIFY. One dedicated client
 * holds the LISTEN, started with the first watcher and ended with the last. When the connection
 * drops it reconnects with backoff and then reports one change, because commits made while it was
 * away were not announced to it.
 */
export function createEventListener(options: ListenerOptions): EventListener {
  const watchers = new Set<() => void>();
  let client: pg.Client | undefined;
  let connecting: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let backoff = options.backoffMs ?? 100;
  let closed = false;

  const notifyAll = () => {
    for (const watcher of [...watchers]) watcher();
  };

  // Commit order: a notified commit's events stay unreadable while an older transaction runs, and
  // that one's commit may announce nothing. So each notification first asks whether committed
  // events are held back, then tells the watchers (who then read everything final as of the
  // check), and while events are held back tells them again every `recheckMs`.
  let checking = false;
  let pending = false;
  let recheck: NodeJS.Timeout | undefined;
  let heldRechecks = 0;
  const announce = async (): Promise<void> => {
    const heldBack = options.heldBack;
    if (!heldBack) return notifyAll();
    pending = true;
    if (checking) return;
    checking = true;
    let held = false;
    try {
      while (pending && !closed) {
        pending = false;
        held = await heldBack();
        notifyAll();
      }
    } finally {
      checking = false;
    }
    if (!held) heldRechecks = 0;
    if (!held || closed || recheck || watchers.size === 0) return;
    // A Sluice write commits within milliseconds; one held open longer (a stuck host) is asked
    // about less and less often, up to once a second, instead of 50 times a second for as long.
    const delay = Math.min((options.recheckMs ?? 20) * 2 ** heldRechecks, MAX_RECHECK_MS);
    heldRechecks++;
    recheck = setTimeout(() => {
      recheck = undefined;
      void announce();
    }, delay);
    recheck.unref();
  };

  const scheduleReconnect = () => {
    if (closed || watchers.size === 0 || timer) return;
    // Jittered, so the hosts of one database do not all knock at once when it comes back.
    timer = setTimeout(
      () => {
        timer = undefined;
        void start(true);
      },
      backoff * (0.5 + Math.random()),
    );
    timer.unref();
    backoff = Math.min(backoff * 2, options.maxBackoffMs ?? 2000);
  };

  const start = (afterDrop: boolean): Promise<void> => {
    if (connecting) return connecting;
    const next = new pg.Client(options.clientConfig);
    connecting = (async () => {
      next.on('error', (err) => {
        options.onError?.(err);
        drop(next);
      });
      next.on('end', () => drop(next));
      next.on('notification', (msg) => {
        if (msg.channel === EVENTS_CHANNEL && msg.payload === options.schema) void announce();
      });
      try {
        await next.connect();
        await next.query(`listen ${EVENTS_CHANNEL}`);
      } catch (err) {
        options.onError?.(err as Error);
        drop(next);
        return;
      }
      if (closed || watchers.size === 0) {
        await next.end().catch(() => undefined);
        return;
      }
      client = next;
      backoff = options.backoffMs ?? 100;
      if (afterDrop) notifyAll();
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  const dropped = new WeakSet<pg.Client>();
  function drop(which: pg.Client): void {
    // 'error' and 'end' both arrive for one failure: handle it once.
    if (dropped.has(which)) return;
    dropped.add(which);
    if (client === which) client = undefined;
    which.removeAllListeners('notification');
    void which.end().catch(() => undefined);
    scheduleReconnect();
  }

  const stop = async () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (recheck) clearTimeout(recheck);
    recheck = undefined;
    if (connecting) await connecting;
    const current = client;
    client = undefined;
    if (current) {
      current.removeAllListeners();
      current.on('error', () => undefined);
      await current.end().catch(() => undefined);
    }
  };

  return {
    watchChanges(onChange) {
      if (closed) return () => undefined;
      const watcher = () => onChange();
      watchers.add(watcher);
      if (!client && !connecting) void start(false);
      return () => {
        watchers.delete(watcher);
        if (watchers.size === 0) void stop();
      };
    },
    async close() {
      closed = true;
      watchers.clear();
      await stop();
    },
  };
}
