import { utf8Length } from '../../core/measure.js';
import type { Principal } from '../../host/identity/index.js';
import { canWatchQueue } from '../../host/identity/index.js';
import type { ChannelEvent, LiveHub } from '../../host/live/index.js';
import { CoalescingOutbox } from '../../host/live/index.js';
import { summaryForReader } from '../../host/queue/index.js';
import { FULL_ROW_BYTES, liveReadsFor } from '../../host/reads/index.js';
import { ChannelListSubscription } from './channel-list-subscription.js';
import { type DispatchObserver, handleRpcText } from './dispatch.js';
import type { RpcSession, SubscriptionControl } from './methods.js';
import { notification } from './notification.js';

/** The parts of a WebSocket a connection uses (ws's WebSocket fits). */
export interface SocketLike {
  readonly bufferedAmount: number;
  readonly readyState: number;
  send(text: string): void;
  pause?(): void;
  resume?(): void;
  /** Drops the connection at once (no closing handshake: the client is not reading). */
  terminate?(): void;
}

const OPEN = 1;
/** Frames queued per connection before the socket stops reading (TCP pushes back on the client). */
const MAX_QUEUED_FRAMES = 32;
/** How often a backed-up socket is checked for having drained (ws has no drain event). */
const DRAIN_POLL_MS = 25;

/**
 * One WebSocket client: requests are handled in arrival order (replies keep request order), and
 * live notifications go through a {@link CoalescingOutbox} so a slow reader costs a bounded amount
 * of memory however many commits happen.
 */
export class RpcConnection {
  readonly outbox: CoalescingOutbox;
  readonly #session: RpcSession;
  readonly #socket: SocketLike;
  readonly #hub: LiveHub;
  readonly #queues = new Map<string, { agent: Principal; name: string; off: () => void }>();
  readonly #channels = new Map<string, () => void>();
  /** The caller's channel list subscription (channel-list-subscription.ts). */
  #channelList: { list: ChannelListSubscription; off: () => void } | null = null;
  readonly #observer: DispatchObserver;
  readonly #onDropped: ((reason: string) => void) | undefined;
  #stallTimer: NodeJS.Timeout | null = null;
  #chain: Promise<void> = Promise.resolve();
  #queued = 0;
  #closed = false;

  constructor(options: {
    session: Omit<RpcSession, 'subscriptions'>;
    socket: SocketLike;
    hub: LiveHub;
    observer?: DispatchObserver;
    /** Called when the connection drops a client that stopped reading (for the log). */
    onDropped?: (reason: string) => void;
  }) {
    this.#onDropped = options.onDropped;
    this.#socket = options.socket;
    this.#hub = options.hub;
    this.#observer = options.observer ?? {};
    const control: SubscriptionControl = {
      subscribe: (queues, channelIds) => this.#subscribe(queues, channelIds),
      unsubscribe: (agentNames, channelIds) => this.#unsubscribe(agentNames, channelIds),
      subscribeChannelList: () => this.#subscribeChannelList(),
      unsubscribeChannelList: () => this.#unsubscribeChannelList(),
      noteListed: (channelIds) => this.#channelList?.list.noteListed(channelIds),
      list: () => ({
        queues: [...this.#queues.values()].map((q) => q.name),
        channels: [...this.#channels.keys()],
        channelList: this.#channelList !== null,
      }),
    };
    this.#session = { ...options.session, subscriptions: control };
    this.outbox = new CoalescingOutbox({
      sink: {
        bufferedAmount: () => this.#socket.bufferedAmount,
        send: (text) => this.#send(text),
      },
      highWaterBytes: this.#session.limits.highWaterBytes,
      renderQueue: (agentId) => this.#renderQueue(agentId),
      renderChannel: (event) => this.#renderChannel(event),
      renderResync: (channelId) => notification('channel.resync', { channelId }),
      renderSidebar: async (channelId, change) =>
        this.#channelList ? this.#channelList.list.render(channelId, change) : null,
      renderSidebarResync: async () =>
        this.#channelList?.list.resync() ?? notification('channel.list.resync', {}),
      renderAgentList: (agentId) => this.#renderAgentList(agentId),
      // Carries nothing: the page re-reads `channel.invitations` (whose rules decide what it sees).
      renderInvitations: () => notification('invitations.changed', {}),
      renderApproval: (approvalId) => this.#renderApproval(approvalId),
      renderApprovalResync: () => notification('approval.resync', {}),
      onError: (err) => this.#observer.onError?.('live', err),
    });
  }

  get principal(): Principal {
    return this.#session.principal;
  }

  /** Bytes the socket holds unsent (what backpressure is judged on). */
  get bufferedAmount(): number {
    return this.#socket.bufferedAmount;
  }

  /** True while the connection listens for anything (queues, channels or the channel list). */
  get subscribed(): boolean {
    return this.#queues.size > 0 || this.#channels.size > 0 || this.#channelList !== null;
  }

  /** Requests received and not yet answered. */
  get pendingRequests(): number {
    return this.#queued;
  }

  /** Queues a text frame; replies go out in request order. */
  receive(text: string): void {
    if (this.#closed) return;
    this.#queued += 1;
    if (this.#queued >= MAX_QUEUED_FRAMES) this.#socket.pause?.();
    this.#chain = this.#chain.then(async () => {
      try {
        // A reply is produced only for a client that reads them: while its socket holds more
        // than the high-water mark, requests wait here (and, queued, stop the socket reading).
        if (!(await this.#drained())) return;
        const reply = await handleRpcText(this.#session, text, this.#observer);
        if (reply !== null) this.#send(reply);
      } finally {
        this.#queued -= 1;
        if (this.#queued === MAX_QUEUED_FRAMES / 4) this.#socket.resume?.();
      }
    });
  }

  /** Detaches: drops subscriptions and releases everything the outbox held. */
  close(): void {
    this.#closed = true;
    if (this.#stallTimer) clearTimeout(this.#stallTimer);
    this.#stallTimer = null;
    for (const { off } of this.#queues.values()) off();
    for (const off of this.#channels.values()) off();
    this.#queues.clear();
    this.#channels.clear();
    this.#unsubscribeChannelList();
    this.outbox.close();
  }

  #send(text: string): void {
    if (this.#closed || this.#socket.readyState !== OPEN) return;
    this.#socket.send(text);
    const buffered = this.#socket.bufferedAmount;
    if (buffered > this.#session.limits.maxBufferedBytes) this.#drop('over the buffered-bytes limit');
    else if (buffered > this.#session.limits.highWaterBytes) this.#watchStall();
  }

  /** Resolves true once the socket is at or under the high-water mark, false if it closed meanwhile. */
  async #drained(): Promise<boolean> {
    while (!this.#closed && this.#socket.readyState === OPEN) {
      if (this.#socket.bufferedAmount <= this.#session.limits.highWaterBytes) return true;
      this.#watchStall();
      await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    }
    return false;
  }

  /** Drops the client if its socket stays over the high-water mark past `stalledSocketMs`. */
  #watchStall(): void {
    if (this.#stallTimer) return;
    const { highWaterBytes, stalledSocketMs } = this.#session.limits;
    const since = Date.now();
    const every = Math.max(DRAIN_POLL_MS, Math.min(1_000, Math.floor(stalledSocketMs / 4)));
    const check = () => {
      this.#stallTimer = null;
      if (this.#closed || this.#socket.bufferedAmount <= highWaterBytes) return;
      if (Date.now() - since >= stalledSocketMs) this.#drop('not reading what it is sent');
      else this.#stallTimer = setTimeout(check, every);
    };
    this.#stallTimer = setTimeout(check, every);
  }

  #drop(reason: string): void {
    this.#onDropped?.(reason);
    this.close();
    this.#socket.terminate?.();
  }

  #subscribe(queues: readonly Principal[], channelIds: readonly string[]): void {
    for (const agent of queues) {
      if (!this.#queues.has(agent.id)) {
        const offQueue = this.#hub.onQueue(agent.id, (agentId) => this.outbox.queueChanged(agentId));
        // The agent's approval requests ride on its queue subscription (docs/rpc.md).
        const offApprovals = this.#hub.onApproval(agent.id, (id) => this.outbox.approvalChanged(id));
        const off = () => {
          offQueue();
          offApprovals();
        };
        this.#queues.set(agent.id, { agent, name: agent.name, off });
      }
      // A fresh subscriber starts from the current summary.
      this.outbox.queueChanged(agent.id);
    }
    for (const channelId of channelIds) {
      if (!this.#channels.has(channelId)) {
        this.#channels.set(
          channelId,
          this.#hub.onChannel(channelId, (event) => this.outbox.channelEvent(event)),
        );
      }
    }
  }

  #unsubscribe(agentNames: readonly string[], channelIds: readonly string[]): void {
    for (const [agentId, q] of this.#queues) {
      if (agentNames.includes(q.name)) {
        q.off();
        this.#queues.delete(agentId);
      }
    }
    for (const channelId of channelIds) {
      this.#channels.get(channelId)?.();
      this.#channels.delete(channelId);
    }
  }

  #subscribeChannelList(): Promise<void> {
    if (this.#channelList) return Promise.resolve();
    const list = new ChannelListSubscription(this.#session, this.#hub, (channelId, change) =>
      this.outbox.sidebarChanged(channelId, change),
    );
    const offSidebar = this.#hub.onSidebar((event) => list.onEvent(event));
    // The agents the caller manages are part of its list (the page's "Agent queues").
    const offAgents = this.#hub.onAgentList((agentId) => this.outbox.agentListChanged(agentId));
    // And the approval requests of every agent the caller may decide for (its pending counts).
    const offApprovals = this.#hub.onAnyApproval((id) => this.outbox.approvalChanged(id));
    // Only the caller's own invitations: nobody hears that someone else was invited.
    const me = this.#session.principal;
    const offInvitations = this.#hub.onInvitations((principalId) => {
      if (principalId === me.id) this.outbox.invitationsChanged();
    });
    this.#channelList = {
      list,
      off: () => {
        offSidebar();
        offAgents();
        offApprovals();
        offInvitations();
      },
    };
    return Promise.resolve();
  }

  #unsubscribeChannelList(): void {
    this.#channelList?.off();
    this.#channelList = null;
  }

  /** `agent.managed {agent, managed}`: an agent was added or its managers changed (docs/rpc.md). */
  async #renderAgentList(agentId: string): Promise<string | null> {
    if (!this.#channelList) return null;
    const listing = await liveReadsFor(this.#session.ctx).agentListing(this.#session.principal, agentId);
    return listing === null ? null : notification('agent.managed', listing);
  }

  /**
   * `approval.changed {agent, approval}`: a request of a watched agent (or, with the channel list,
   * of any agent) was made or decided. Only to a subscriber who may decide it (the owner, its
   * managers), checked on every push.
   */
  async #renderApproval(approvalId: string): Promise<string | null> {
    const approval = await liveReadsFor(this.#session.ctx).approvalForDecider(
      this.#session.principal,
      approvalId,
    );
    if (approval === null) return null;
    if (!this.#channelList && ![...this.#queues.values()].some((q) => q.name === approval.agent)) return null;
    return notification('approval.changed', { agent: approval.agent, approval });
  }

  async #renderQueue(agentId: string): Promise<string | null> {
    const sub = this.#queues.get(agentId);
    if (!sub) return null;
    const reads = liveReadsFor(this.#session.ctx);
    // Access is rechecked on every push (I6): a reader who lost it stops hearing about the queue.
    const me = this.#session.principal;
    const readers = await this.#hub.shared(`readers:${agentId}`, () => reads.queueReaderIds(agentId));
    if (!canWatchQueue(me, agentId, readers)) {
      this.#unsubscribe([sub.name], []);
      return notification('subscription.ended', { queue: sub.name, reason: 'denied' });
    }
    const facts = await this.#hub.shared(`queue:${agentId}`, () => reads.queueSummaryFacts(sub.agent));
    // Message ids only from channels this reader shares with the agent (as queue.summary).
    const visible = new Set<string>();
    for (const channelId of [facts.newestPersonChannelId, facts.blockingChannelId]) {
      if (channelId === null) continue;
      const members = await this.#hub.shared(`members:${channelId}`, () => reads.currentMemberIds(channelId));
      if (members.has(me.id) && members.has(agentId)) visible.add(channelId);
    }
    const presence = await this.#hub.shared(`presence:${agentId}`, () => reads.agentPresence(agentId));
    return notification('queue.changed', {
      summary: { ...summaryForReader(facts, (id) => visible.has(id)), presence },
    });
  }

  async #renderChannel(event: ChannelEvent): Promise<string | null> {
    if (!this.#channels.has(event.channelId)) return null;
    const reads = liveReadsFor(this.#session.ctx);
    const members = await this.#hub.shared(`members:${event.channelId}`, () =>
      reads.currentMemberIds(event.channelId),
    );
    if (!members.has(this.#session.principal.id)) {
      this.#unsubscribe([], [event.channelId]);
      return notification('subscription.ended', { channel: event.channelId, reason: 'not_member' });
    }
    if (event.kind === 'receipts.changed') {
      const receipts = await this.#hub.shared(`receipts:${event.messageId}`, () =>
        reads.presentReceipts(event.messageId),
      );
      return receipts === null
        ? null
        : notification('channel.receipts', { channelId: event.channelId, ...receipts });
    }
    const fullLimit = Math.min(FULL_ROW_BYTES, this.#session.limits.replyBytes - 1024);
    const bounded = await this.#hub.shared(`message:${event.seq}`, () =>
      reads.presentForLive(event.messageId, fullLimit),
    );
    if (bounded === null) return null;
    const text = notification('channel.message', {
      channelId: event.channelId,
      kind: event.kind,
      message: bounded,
    });
    if (utf8Length(text) <= this.#session.limits.replyBytes) return text;
    // Over the reply budget even compact (a tiny configured budget): say where to read it instead.
    return notification('channel.message', {
      channelId: event.channelId,
      kind: event.kind,
      message: {
        messageId: bounded.messageId,
        seq: bounded.seq,
        bodyBytes: bounded.bodyBytes,
        truncated: true,
      },
    });
  }
}
