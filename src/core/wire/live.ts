import type { Approval } from './approvals.js';
import type { ChannelActivityRow, HistoryMessage } from './channels.js';
import type { PrincipalRef } from './kinds.js';
import type { AgentPresence, QueueSummary } from './queue.js';

// The live notifications a WebSocket subscriber is sent (docs/rpc.md, "Live notifications"): the
// host builds each with these params and the page's handlers read them, both checked against this
// one map by the type checker.

/**
 * A `channel.message` whose record does not fit the reply budget even compact (only under a small
 * configured `replyBytes`): where the message is and how big its body is, nothing to show. It has
 * no `author` and no `body` (which every {@link HistoryMessage} has); read the body with
 * `message.read`.
 */
export interface LiveMessageStub {
  messageId: string;
  seq: number;
  bodyBytes: number;
  truncated: true;
}

/** Params that carry nothing: the notification itself says what to read again. */
export type NoParams = Record<string, never>;

/** Each live notification's method and its params. */
export interface LiveNotifications {
  /** The agent's queue summary, re-read when sent, with the agent's presence. */
  'queue.changed': { summary: QueueSummary & { presence: AgentPresence } };
  /** A message of a subscribed channel, created or edited: its record (compact over 64 KiB). */
  'channel.message': {
    channelId: string;
    kind: 'message.created' | 'message.edited';
    message: HistoryMessage | LiveMessageStub;
  };
  /** Events of the channel were collapsed while the socket was backed up: re-read its history. */
  'channel.resync': { channelId: string };
  /** Where each addressed agent's copy of a message stands now (as `channel.history` gives them). */
  'channel.receipts': {
    channelId: string;
    messageId: string;
    seq: number;
    receipts: HistoryMessage['receipts'];
    receiptCount: number;
  };
  /** An approval request of `agent` was made or decided (as `approval.list` gives it). */
  'approval.changed': { agent: string; approval: Approval };
  /** Approval changes overflowed while the socket was backed up: re-read `approval.list`. */
  'approval.resync': NoParams;
  /** The subscriber lost access to a queue or a channel: nothing more comes for it. */
  'subscription.ended': { queue: string; reason: 'denied' } | { channel: string; reason: 'not_member' };
  /** The caller is now a member of this channel (its `channel.list {order: "activity"}` row). */
  'channel.joined': { channel: ChannelActivityRow };
  /** Members of one of the caller's channels changed, or a channel it has no row of moved up. */
  'channel.updated': { channel: ChannelActivityRow };
  /** The caller left or was removed from the channel. */
  'channel.left': { channelId: string };
  /** A listed channel's unread count or activity (its sort key) moved. */
  'channel.unread': { channelId: string; unread: number; activity: number };
  /** Channel-list changes overflowed while the socket was backed up: re-read `channel.list`. */
  'channel.list.resync': NoParams;
  /** An agent was added or its managers changed; whether the caller manages it now. */
  'agent.managed': { agent: PrincipalRef & { kind: 'agent' }; managed: boolean };
  /** The caller's own pending invitations changed: re-read `channel.invitations`. */
  'invitations.changed': NoParams;
}

/** A live notification's method name. */
export type LiveMethod = keyof LiveNotifications;
