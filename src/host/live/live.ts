import { type EventRow, lastEventSeq, listEventsAfter } from '../../store/ops/events.js';
import type { HostContext } from '../identity/context.js';

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
/** An approval request of the agent was made or decided (docs/approvals.md). */
export type ApprovalListener = (approvalId: string) => void;
export type ChannelListener = (event: ChannelEvent) => void;
export type SidebarListener = (event: SidebarEvent) => void;

/** Fans the event log out to in-process listeners, by agent (queues) and by channel. */
export interface LiveHub {
  onQueue(agentId: string, listener: QueueListener): () => void;
  /** The agent's approval requests, one call per request made or decided. */
  onApproval(agentId: string, listener: ApprovalListener): () => void;
  /**
   * Every agent's approval requests, for the page's pending counts: the listener decides whom it
   * may tell (only a person who may decide the request).
   */
  onAnyApproval(listener: ApprovalListener): () => void;
  onChannel(channelId: string, listener: ChannelListener): () => void;
  /**
   * Every channel's membership and activity events, for channel lists: the listener decides what
   * concerns its principal (and must tell nothing about channels that principal is not in).
   */
  onSidebar(listener: SidebarListener): () => void;
  /** Every agent added or whose managers changed (names are public: the listener decides the rest). */
  onAgentList(listener: AgentListListener): () => void;
  /** Every principal whose pending invitations changed: the listener tells only that principal. */
  onInvitations(listener: (principalId: string) => void): () => void;
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
  const approvals = new Map<string, Set<ApprovalListener>>();
  const anyApprovals = new Set<ApprovalListener>();
  const channels = new Map<string, Set<ChannelListener>>();
  const sidebars = new Set<SidebarListener>();
  const agentLists = new Set<AgentListListener>();
  const invitationLists = new Set<(principalId: string) => void>();
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
      if (e.kind === 'invitation.changed' && e.agent_id) for (const l of invitationLists) l(e.agent_id);
      if (e.kind === 'approval.changed' && e.agent_id && e.message_id) {
        for (const l of approvals.get(e.agent_id) ?? []) l(e.message_id);
        for (const l of anyApprovals) l(e.message_id);
      }
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

  const listening = () =>
    queues.size +
      approvals.size +
      anyApprovals.size +
      channels.size +
      sidebars.size +
      agentLists.size +
      invitationLists.size >
    0;

  /**
   * With nobody listening (a host with no page or client subscribed), the hub only moves to the
   * log's end: one index seek instead of reading and dispatching every event of every commit.
   * Events before a listener registers are not its business; those after, a later read finds.
   * False when a listener is there after the lookup (it may have come while looking), so the
   * events are read and dispatched as usual; one that came and went meanwhile needs nothing.
   */
  const skipUnheard = async (): Promise<boolean> => {
    if (listening()) return false;
    const end = await lastEventSeq(ctx.store.db);
    if (listening()) return false;
    if (end > seen) {
      seen = end;
      memo = new Map();
    }
    return true;
  };

  const drain = async () => {
    do {
      again = false;
      for (;;) {
        if (closed) return;
        if (await skipUnheard()) break;
        const events = await listEventsAfter(ctx.store.db, seen, EVENT_BATCH);
        if (events.length === 0) break;
        seen = Number(events[events.length - 1]?.seq ?? seen);
        dispatch(events);
        // A short batch was everything committed when it was read; a commit since then woke the
        // hub (`again`), so no second read is needed to find the log's end.
        if (events.length < EVENT_BATCH) break;
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
    onApproval: (agentId, listener) => register(approvals, agentId, listener),
    onChannel: (channelId, listener) => register(channels, channelId, listener),
    onSidebar(listener) {
      sidebars.add(listener);
      return () => sidebars.delete(listener);
    },
    onAnyApproval(listener) {
      anyApprovals.add(listener);
      return () => anyApprovals.delete(listener);
    },
    onAgentList(listener) {
      agentLists.add(listener);
      return () => agentLists.delete(listener);
    },
    onInvitations(listener) {
      invitationLists.add(listener);
      return () => invitationLists.delete(listener);
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
      approvals.clear();
      anyApprovals.clear();
      channels.clear();
      sidebars.clear();
      agentLists.clear();
      invitationLists.clear();
    },
  };
}
