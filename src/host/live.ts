import { isSluiceError } from '../core/errors.js';
import { type EventRow, lastEventSeq, listEventsAfter } from '../store/ops/events.js';
import type { HostContext } from './context.js';

/**
 * A channel event worth telling subscribers about. `receipts.changed`: an agent's inbox entry for
 * the message changed state (waiting, handled, archived, returned, withdrawn), or the message was
 * offered to or received by an agent's model (its `message.status` moved).
 */
export interface ChannelEvent {
  kind: 'message.created' | 'message.edited' | 'receipts.changed';
  /** The event's seq (for a receipts change, the last one of its batch). */
  seq: number;
  channelId: string;
  messageId: string;
}

/**
 * Something that may change a principal's channel list: `members` (a channel was created or its
 * members changed: someone may have joined or left), `activity` (a message was posted: unread
 * counts move), `read` (`principalId`'s read mark moved).
 */
export interface SidebarEvent {
  kind: 'members' | 'activity' | 'read';
  channelId: string;
  principalId?: string;
}

/** An agent was added or its managers changed: whose page lists it as theirs may change. */
export type AgentListListener = (agentId: string) => void;

export type QueueListener = (agentId: string) => void;
export type ChannelListener = (event: ChannelEvent) => void;
export type SidebarListener = (event: SidebarEvent) => void;

/** Fans the event log out to in-process listeners, by agent (queues) and by channel. */
export interface LiveHub {
  onQueue(agentId: string, listener: QueueListener): () => void;
  onChannel(channelId: string, listener: ChannelListener): () => void;
  /**
   * Every channel's membership and activity events, for channel lists: the listener decides what
   * concerns its principal (and must tell nothing about channels that principal is not in).
   */
  onSidebar(listener: SidebarListener): () => void;
  /** Every agent added or whose managers changed (names are public: the listener decides the rest). */
  onAgentList(listener: AgentListListener): () => void;
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
  const sidebars = new Set<SidebarListener>();
  const agentLists = new Set<AgentListListener>();
  let seen = await lastEventSeq(ctx.store.db);
  let running: Promise<void> | null = null;
  let again = false;
  let closed = false;
  let memo = new Map<string, Promise<unknown>>();

  const dispatch = (events: readonly EventRow[]) => {
    memo = new Map();
    const agents = new Set<string>();
    // Receipt changes of one batch collapse to one event per message (a settled turn moves many).
    const receipts = new Map<string, ChannelEvent>();
    const tellSidebars = (event: SidebarEvent) => {
      for (const l of sidebars) l(event);
    };
    for (const e of events) {
      // A turn that starts or ends changes the agent's presence, which queue pushes carry.
      if ((e.kind === 'queue.changed' || e.kind === 'turn.changed') && e.agent_id) agents.add(e.agent_id);
      // Only inbox transitions name the channel too (sends and edits have their own channel event).
      // A message offered or received (`message.progress`) moves its status too, not the queue.
      if (
        (e.kind === 'queue.changed' || e.kind === 'message.progress') &&
        e.channel_id &&
        e.message_id &&
        channels.has(e.channel_id)
      ) {
        receipts.delete(e.message_id);
        receipts.set(e.message_id, {
          kind: 'receipts.changed',
          seq: Number(e.seq),
          channelId: e.channel_id,
          messageId: e.message_id,
        });
      }
      if ((e.kind === 'message.created' || e.kind === 'message.edited') && e.channel_id && e.message_id) {
        const event: ChannelEvent = {
          kind: e.kind,
          seq: Number(e.seq),
          channelId: e.channel_id,
          messageId: e.message_id,
        };
        for (const l of channels.get(e.channel_id) ?? []) l(event);
      }
      if (e.kind === 'agent.managers' && e.agent_id) for (const l of agentLists) l(e.agent_id);
      if (sidebars.size === 0 || !e.channel_id) continue;
      if (e.kind === 'channel.created' || e.kind === 'channel.members')
        tellSidebars({ kind: 'members', channelId: e.channel_id });
      else if (e.kind === 'message.created') tellSidebars({ kind: 'activity', channelId: e.channel_id });
      else if (e.kind === 'read.marked' && e.agent_id)
        tellSidebars({ kind: 'read', channelId: e.channel_id, principalId: e.agent_id });
    }
    for (const event of receipts.values()) for (const l of channels.get(event.channelId) ?? []) l(event);
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
      .then(
        () => {
          failures = 0;
        },
        (err) => {
          options.onError?.(err);
          retryLater();
        },
      )
      .finally(() => {
        running = null;
      });
    return running;
  };

  // A read that failed (the database restarting) is tried again by itself, with jittered backoff:
  // no later commit may come to wake the hub, and its subscribers must still get what was missed.
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;
  const retryLater = () => {
    if (closed || retry) return;
    const delay = Math.min(2_000, 50 * 2 ** failures) * (0.5 + Math.random());
    failures++;
    retry = setTimeout(() => {
      retry = undefined;
      void pump();
    }, delay);
    retry.unref();
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
    onSidebar(listener) {
      sidebars.add(listener);
      return () => sidebars.delete(listener);
    },
    onAgentList(listener) {
      agentLists.add(listener);
      return () => agentLists.delete(listener);
    },
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
      if (retry) clearTimeout(retry);
      ctx.localCommitListeners.delete(wake);
      stopWatching();
      queues.clear();
      channels.clear();
      sidebars.clear();
      agentLists.clear();
    },
  };
}

/** The store could not answer (the database restarting): worth asking again shortly. */
function isUnavailable(err: unknown): boolean {
  return isSluiceError(err) && err.code === 'unavailable';
}

/** What to re-check for a channel in a channel list: membership (and the summary), or only unread. */
export type SidebarChange = 'members' | 'unread';

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
  /** A channel-list notification for one channel (joined, left, updated, unread), or null. */
  renderSidebar?: (channelId: string, kind: SidebarChange) => Promise<string | null>;
  /** The notice that channel-list changes overflowed: the client re-reads `channel.list`. */
  renderSidebarResync?: () => Promise<string>;
  /** Whether the subscriber manages an agent that was added or whose managers changed, or null. */
  renderAgentList?: (agentId: string) => Promise<string | null>;
  /** Channels with channel-list changes held while backed up before they collapse into one resync. */
  maxHeldSidebar?: number;
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
  readonly #o: Required<
    Omit<OutboxOptions, 'onError' | 'renderSidebar' | 'renderSidebarResync' | 'renderAgentList'>
  > &
    Pick<OutboxOptions, 'onError' | 'renderSidebar' | 'renderSidebarResync' | 'renderAgentList'>;
  readonly #queues = new Set<string>();
  /** Agents whose listing changed, one entry each: held like queues, however many commits. */
  readonly #agents = new Set<string>();
  readonly #sidebar = new Map<string, SidebarChange>();
  #sidebarResync = false;
  #events: ChannelEvent[] = [];
  readonly #resync = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #flushing = false;
  #closed = false;
  /** Flushes in a row that met an unavailable store (the database restarting): the backoff grows. */
  #unavailable = 0;

  constructor(options: OutboxOptions) {
    this.#o = {
      highWaterBytes: 256 * 1024,
      pollMs: 25,
      maxHeldChannelEvents: 256,
      maxHeldSidebar: 256,
      ...options,
    };
  }

  /** Items held right now (agent ids, channel events, resync notices): bounded, whatever the commits. */
  pendingSize(): number {
    return (
      this.#queues.size +
      this.#agents.size +
      this.#events.length +
      this.#resync.size +
      this.#sidebar.size +
      (this.#sidebarResync ? 1 : 0)
    );
  }

  /**
   * A channel's place in the subscriber's channel list may have changed. Held as one entry per
   * channel (`members` outranks `unread`); past `maxHeldSidebar` channels, one resync instead.
   */
  sidebarChanged(channelId: string, change: SidebarChange): void {
    if (this.#closed || this.#sidebarResync) return;
    if (this.#sidebar.get(channelId) !== 'members') this.#sidebar.set(channelId, change);
    if (this.#sidebar.size > this.#o.maxHeldSidebar) {
      this.#sidebar.clear();
      this.#sidebarResync = true;
    }
    this.#schedule(0);
  }

  /** An agent was added or its managers changed: the subscriber is told whether it manages it. */
  agentListChanged(agentId: string): void {
    if (this.#closed) return;
    this.#agents.add(agentId);
    this.#schedule(0);
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
    this.#agents.clear();
    this.#events = [];
    this.#resync.clear();
    this.#sidebar.clear();
    this.#sidebarResync = false;
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
          const text = await this.#o.renderChannel(event).catch((err: unknown) => {
            // Kept for the retry while the store is unavailable; otherwise the client re-reads.
            if (isUnavailable(err)) this.#events.unshift(event);
            else this.#resync.add(event.channelId);
            throw err;
          });
          if (text !== null && !this.#closed) this.#o.sink.send(text);
          continue;
        }
        const [channelId] = this.#resync;
        if (channelId !== undefined) {
          this.#resync.delete(channelId);
          this.#o.sink.send(this.#o.renderResync(channelId));
          continue;
        }
        if (this.#sidebarResync) {
          this.#sidebarResync = false;
          this.#sidebar.clear();
          const text = await this.#o.renderSidebarResync?.().catch((err: unknown) => {
            this.#sidebarResync = isUnavailable(err);
            throw err;
          });
          if (text !== undefined && !this.#closed) this.#o.sink.send(text);
          continue;
        }
        const [sidebar] = this.#sidebar;
        if (sidebar !== undefined) {
          // Removed before the read, like a queue: a change during the read re-adds it.
          this.#sidebar.delete(sidebar[0]);
          const text = await this.#o.renderSidebar?.(sidebar[0], sidebar[1]).catch((err: unknown) => {
            if (isUnavailable(err) && !this.#sidebar.has(sidebar[0]))
              this.#sidebar.set(sidebar[0], sidebar[1]);
            throw err;
          });
          if (text != null && !this.#closed) this.#o.sink.send(text);
          continue;
        }
        const [listed] = this.#agents;
        if (listed !== undefined) {
          this.#agents.delete(listed);
          const text = await this.#o.renderAgentList?.(listed);
          if (text != null && !this.#closed) this.#o.sink.send(text);
          continue;
        }
        const [agentId] = this.#queues;
        if (agentId !== undefined) {
          // Removed before the read: a commit during the read re-adds it and is not lost.
          this.#queues.delete(agentId);
          const text = await this.#o.renderQueue(agentId).catch((err: unknown) => {
            if (isUnavailable(err)) this.#queues.add(agentId);
            throw err;
          });
          if (text !== null && !this.#closed) this.#o.sink.send(text);
        }
      }
      this.#unavailable = 0;
    } catch (err) {
      this.#o.onError?.(err);
      if (isUnavailable(err)) this.#unavailable++;
    } finally {
      this.#flushing = false;
    }
    // What the store could not read now is read again after a jittered, growing pause.
    const delay =
      this.#unavailable === 0 ? 0 : Math.min(2_000, 50 * 2 ** this.#unavailable) * (0.5 + Math.random());
    if (!this.#closed && this.pendingSize() > 0) this.#schedule(delay);
  }
}
