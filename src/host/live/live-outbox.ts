import { isSluiceError } from '../../core/errors.js';
import type { ChannelEvent } from './live.js';

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
  /** The notice that the subscriber's own invitations changed: the client re-reads them. */
  renderInvitations?: () => string;
  /** `approval.changed` for one approval request, or null when the subscriber may not see it. */
  renderApproval?: (approvalId: string) => Promise<string | null>;
  /** The notice that approval changes overflowed: the client re-reads `approval.list`. */
  renderApprovalResync?: () => string;
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
type OptionalRender =
  | 'onError'
  | 'renderSidebar'
  | 'renderSidebarResync'
  | 'renderAgentList'
  | 'renderApproval'
  | 'renderApprovalResync'
  | 'renderInvitations';

export class CoalescingOutbox {
  readonly #o: Required<Omit<OutboxOptions, OptionalRender>> & Pick<OutboxOptions, OptionalRender>;
  /** Approval requests made or decided, one entry each; past `maxHeldSidebar`, one resync instead. */
  readonly #approvals = new Set<string>();
  #approvalResync = false;
  readonly #queues = new Set<string>();
  /** Agents whose listing changed, one entry each: held like queues, however many commits. */
  readonly #agents = new Set<string>();
  readonly #sidebar = new Map<string, SidebarChange>();
  #sidebarResync = false;
  /** The subscriber's invitations changed: one notice however many commits. */
  #invitations = false;
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
      (this.#sidebarResync ? 1 : 0) +
      this.#approvals.size +
      (this.#approvalResync ? 1 : 0) +
      (this.#invitations ? 1 : 0)
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

  /** The subscriber's own pending invitations changed. */
  invitationsChanged(): void {
    if (this.#closed) return;
    this.#invitations = true;
    this.#schedule(0);
  }

  /** An approval request of a watched agent was made or decided. */
  approvalChanged(approvalId: string): void {
    if (this.#closed || this.#approvalResync) return;
    this.#approvals.add(approvalId);
    if (this.#approvals.size > this.#o.maxHeldSidebar) {
      this.#approvals.clear();
      this.#approvalResync = true;
    }
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
    this.#invitations = false;
    this.#approvals.clear();
    this.#approvalResync = false;
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
        if (this.#invitations) {
          this.#invitations = false;
          const text = this.#o.renderInvitations?.();
          if (text !== undefined && !this.#closed) this.#o.sink.send(text);
          continue;
        }
        if (this.#approvalResync) {
          this.#approvalResync = false;
          const text = this.#o.renderApprovalResync?.();
          if (text !== undefined && !this.#closed) this.#o.sink.send(text);
          continue;
        }
        const [approvalId] = this.#approvals;
        if (approvalId !== undefined) {
          this.#approvals.delete(approvalId);
          const text = await this.#o.renderApproval?.(approvalId).catch((err: unknown) => {
            if (isUnavailable(err)) this.#approvals.add(approvalId);
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
