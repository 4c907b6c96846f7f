import { type EventRow, lastEventSeq, listEventsAfter } from '../store/ops/events.js';
import type { HostContext } from './context.js';

/** A channel event worth telling subscribers about. */
export interface ChannelEvent {
  kind: 'message.created' | 'message.edited';
  seq: number;
  channelId: string;
  messageId: string;
}

export type QueueListener = (agentId: string) => void;
export type ChannelListener = (event: ChannelEvent) => void;

/** Fans the event log out to in-process listeners, by agent (queues) and by channel. */
export interface LiveHub {
  onQueue(agentId: string, listener: QueueListener): () => void;
  onChannel(channelId: string, listener: ChannelListener): () => void;
  /** Reads any events not yet seen; resolves once they are dispatched. */
  pump(): Promise<void>;
  /** The highest event seq dispatched so far. */
  lastSeq(): number;
  /**
   * Computes `key` once for every subscriber until the next events are dispatched: renders that
   * are the same for everyone (a queue summary, a message's presentation) cost one read per change,
   * not one per subscriber.
   */
  shared<T>(key: string, compute: () => Promise<T>): Promise<T>;
  close(): void;
}

const EVENT_BATCH = 1000;

/**
 * Follows the event log, so a commit by any process (the CLI, a hook, the MCP server) reaches
 * subscribers: this process's commits through `ctx.localCommitListeners`, other processes' through
 * `store.watchChanges` (SQLite: PRAGMA data_version polling). Each wake-up reads the events after
 * the last seen seq; many queue commits in one read collapse into one notification per agent.
 */
export async function startLiveHub(
  ctx: HostContext,
  options: { onError?: (err: unknown) => void } = {},
): Promise<LiveHub> {
  const queues = new Map<string, Set<QueueListener>>();
  const channels = new Map<string, Set<ChannelListener>>();
  let seen = await lastEventSeq(ctx.store.db);
  let running: Promise<void> | null = null;
  let again = false;
  let closed = false;
  let memo = new Map<string, Promise<unknown>>();

  const dispatch = (events: readonly EventRow[]) => {
    memo = new Map();
    const agents = new Set<string>();
    for (const e of events) {
      if (e.kind === 'queue.changed' && e.agent_id) agents.add(e.agent_id);
      if ((e.kind === 'message.created' || e.kind === 'message.edited') && e.channel_id && e.message_id) {
        const event: ChannelEvent = {
          kind: e.kind,
          seq: Number(e.seq),
          channelId: e.channel_id,
          messageId: e.message_id,
        };
        for (const l of channels.get(e.channel_id) ?? []) l(event);
      }
    }
    for (const agentId of agents) for (const l of queues.get(agentId) ?? []) l(agentId);
  };

  const drain = async () => {
    do {
      again = false;
      for (;;) {
        if (closed) return;
        const events = await listEventsAfter(ctx.store.db, seen, EVENT_BATCH);
        if (events.length === 0) break;
        seen = Number(events[events.length - 1]?.seq ?? seen);
        dispatch(events);
      }
    } while (again);
  };

  const pump = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = drain()
      .catch((err) => options.onError?.(err))
      .finally(() => {
        running = null;
      });
    return running;
  };

  const wake = () => {
    void pump();
  };
  ctx.localCommitListeners.add(wake);
  const stopWatching = ctx.store.watchChanges(wake);

  const register = <L>(map: Map<string, Set<L>>, key: string, listener: L) => {
    let set = map.get(key);
    if (!set) {
      set = new Set();
      map.set(key, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) map.delete(key);
    };
  };

  return {
    onQueue: (agentId, listener) => register(queues, agentId, listener),
    onChannel: (channelId, listener) => register(channels, channelId, listener),
    pump,
    lastSeq: () => seen,
    shared<T>(key: string, compute: () => Promise<T>): Promise<T> {
      let found = memo.get(key) as Promise<T> | undefined;
      if (!found) {
        found = compute();
        memo.set(key, found);
        // A failed read is not shared: the next subscriber tries again.
        found.catch(() => memo.delete(key));
      }
      return found;
    },
    close() {
      closed = true;
      ctx.localCommitListeners.delete(wake);
      stopWatching();
      queues.clear();
      channels.clear();
    },
  };
}

/** Where a subscriber's notifications go: a socket, as far as coalescing needs to know it. */
export interface NotificationSink {
  /** Bytes accepted but not yet handed to the OS (ws `bufferedAmount`). */
  bufferedAmount(): number;
  send(text: string): void;
}

export interface OutboxOptions {
  sink: NotificationSink;
  /** The latest queue summary notification for an agent, or null to send nothing. */
  renderQueue: (agentId: string) => Promise<string | null>;
  /** A channel event notification, or null when the subscriber may no longer see it. */
  renderChannel: (event: ChannelEvent) => Promise<string | null>;
  /** A resync notice for a channel whose events overflowed while the socket was backed up. */
  renderResync: (channelId: string) => string;
  /** Above this many buffered bytes the socket counts as backed up. */
  highWaterBytes?: number;
  /** How often a backed-up socket is checked for having drained. */
  pollMs?: number;
  /** Channel events held while backed up before they collapse into a resync notice. */
  maxHeldChannelEvents?: number;
  onError?: (err: unknown) => void;
}

/**
 * Per-subscriber coalescing. Queue changes are held as a set of agent ids, so however many commits
 * happen while the socket is backed up, each agent costs one pending re-read of the latest
 * summary when it drains. Channel events are held up to a bound, then collapse into one resync
 * notice per channel. `close()` releases everything held.
 */
export class CoalescingOutbox {
  readonly #o: Required<Omit<OutboxOptions, 'onError'>> & Pick<OutboxOptions, 'onError'>;
  readonly #queues = new Set<string>();
  #events: ChannelEvent[] = [];
  readonly #resync = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #flushing = false;
  #closed = false;

  constructor(options: OutboxOptions) {
    this.#o = { highWaterBytes: 256 * 1024, pollMs: 25, maxHeldChannelEvents: 256, ...options };
  }

  /** Items held right now (agent ids, channel events, resync notices): bounded, whatever the commits. */
  pendingSize(): number {
    return this.#queues.size + this.#events.length + this.#resync.size;
  }

  queueChanged(agentId: string): void {
    if (this.#closed) return;
    this.#queues.add(agentId);
    this.#schedule(0);
  }

  channelEvent(event: ChannelEvent): void {
    if (this.#closed) return;
    if (this.#resync.has(event.channelId)) return;
    this.#events.push(event);
    if (this.#events.length > this.#o.maxHeldChannelEvents) {
      // Too much held: keep one resync notice per channel instead of the events.
      for (const e of this.#events) this.#resync.add(e.channelId);
      this.#events = [];
    }
    this.#schedule(0);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#queues.clear();
    this.#events = [];
    this.#resync.clear();
  }

  #schedule(delay: number): void {
    if (this.#timer || this.#flushing || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#flush();
    }, delay);
  }

  #backedUp(): boolean {
    return this.#o.sink.bufferedAmount() > this.#o.highWaterBytes;
  }

  async #flush(): Promise<void> {
    if (this.#closed) return;
    this.#flushing = true;
    try {
      while (!this.#closed && this.pendingSize() > 0) {
        if (this.#backedUp()) {
          this.#flushing = false;
          this.#schedule(this.#o.pollMs);
          return;
        }
        // Channel events first and in order, then resyncs, then the latest queue summaries.
        const event = this.#events.shift();
        if (event) {
          const text = await this.#o.renderChannel(event);
          if (text !== null && !this.#closed) this.#o.sink.send(text);
          continue;
        }
        const [channelId] = this.#resync;
        if (channelId !== undefined) {
          this.#resync.delete(channelId);
          this.#o.sink.send(this.#o.renderResync(channelId));
          continue;
        }
        const [agentId] = this.#queues;
        if (agentId !== undefined) {
          // Removed before the read: a commit during the read re-adds it and is not lost.
          this.#queues.delete(agentId);
          const text = await this.#o.renderQueue(agentId);
          if (text !== null && !this.#closed) this.#o.sink.send(text);
        }
      }
    } catch (err) {
      this.#o.onError?.(err);
    } finally {
      this.#flushing = false;
    }
    if (!this.#closed && this.pendingSize() > 0) this.#schedule(0);
  }
}
