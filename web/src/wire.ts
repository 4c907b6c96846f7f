// The JSON-RPC shapes of DESIGN.md §3.3 as the page uses them. The host is the authority; fields the
// page does not read are left out, and optional fields stay optional so an older host still renders.

export type PrincipalKind = 'person' | 'agent';
export type MessageSource = 'person' | 'agent' | 'unknown';
export type InboxState = 'waiting' | 'returned' | 'handled' | 'archived' | 'withdrawn';

export interface PrincipalRef {
  id: string;
  name: string;
  kind: PrincipalKind;
}

/** `principal.list {after?, limit?}`: names and kinds in name order; follow `nextAfter` until null. */
/** `agent.managed`: an agent was added or its managers changed; whether the reader manages it now. */
export interface AgentManagedEvent {
  agent: PrincipalRef;
  managed: boolean;
}

export interface PrincipalListPage {
  principals: PrincipalRef[];
  nextAfter: string | null;
}

/** `channel.create` / `channel.addMember` reply. */
export interface ChannelCreated {
  id: string;
  name: string;
  kind: 'dm' | 'group';
  joined: string[];
  invited: string[];
}

export interface Hello {
  protocol: string;
  capabilities: string[];
  limits: Record<string, number>;
  principal: PrincipalRef;
  /**
   * Whether this principal may add an agent (`principal.addAgent`); the host decides
   * (docs/security.md). Absent from an older host: the page then hides "New agent".
   */
  canAddAgent?: boolean;
}

export interface QueueSummary {
  agent: string;
  generation: string;
  revision: number;
  total: number;
  /** Messages ever queued for the agent (0: none yet). Absent from an older host. */
  totalQueued?: number;
  counts: { person: number; agent: number; unknown: number };
  newestPersonMessageId: string | null;
  blockingReturnedMessageId: string | null;
  resumeAvailable: boolean;
  paused: boolean;
  /** In `queue.summary` replies and `queue.changed` pushes. */
  presence?: AgentPresence;
  /**
   * In `queue.summary` replies only: whether the reader may pause or resume the whole queue (the
   * agent, the owner or a manager; docs/security.md). Absent from an older host.
   */
  canPause?: boolean;
}

/** What the host knows of an agent's activity, from its turns (docs/web.md, "Presence"). */
export interface AgentPresence {
  state: 'driven' | 'in-turn' | 'idle';
  lastActivityAt: string | null;
  lastOutcome: string | null;
  driver: boolean;
}

export interface QueueRow {
  messageId: string;
  channelId: string;
  position: number;
  state: InboxState;
  source: MessageSource;
  senderLabels: string[];
  senderCount: number;
  preview: string;
  truncated: boolean;
  bodyBytes: number;
  createdAt: string;
  /** Absent from an older host. */
  attachmentCount?: number;
  returnedReason?: string;
  returnedFailure?: { kind: string };
}

export type QueuePageReply =
  | {
      status: 'page';
      generation: string;
      revision: number;
      rows: QueueRow[];
      hasMore: { before: boolean; after: boolean };
      previousCursor: string | null;
      nextCursor: string | null;
    }
  | { status: 'stale'; generation: string; revision: number; reason?: string };

export type QueueReadReply =
  | {
      status: 'body';
      messageId: string;
      bodyBytes: number;
      part: { offset: number; text: string };
      nextCursor: string | null;
    }
  | { status: 'gone' | 'handed-off' | 'state-changed'; messageId: string; state: InboxState | null };

export interface AttachmentRef {
  attachment_id: string;
  name: string;
  mime: string;
  size: number;
}

export interface ChannelSummary {
  id: string;
  name: string;
  kind: 'dm' | 'group';
  /** The first members by name (up to 50); `memberCount` counts them all. */
  members: PrincipalRef[];
  memberCount: number;
  /** Unread messages by others, counted up to 100 ("100 or more"); absent from an older host. */
  unread?: number;
  /** The sidebar's sort key, newest first (`channel.list {order: "activity"}` and live rows). */
  activity?: number;
}

/** `channel.members {channelId, cursor?, limit?}`: members in name order; follow `nextCursor` until null. */
export interface ChannelMembersPage {
  channelId: string;
  members: PrincipalRef[];
  memberCount: number;
  nextCursor: string | null;
}

/**
 * `channel.list {cursor?, limit?, order?, filter?, channelId?}`: one bounded page; follow
 * `nextCursor` for more. With `order: "activity"` the most recent first, each row with `activity`.
 */
export interface ChannelListPage {
  channels: ChannelSummary[];
  nextCursor: string | null;
}

/** One message of a channel's human presentation record (a history row or a live event). */
export interface TimelineMessage {
  messageId: string;
  seq: number;
  channelId: string;
  author: { id: string; name: string; kind: PrincipalKind | 'unknown' };
  createdAt: string;
  subject: string | null;
  replyTo: string | null;
  /** The quoted parent of a reply; absent from an older host, null when the parent is gone. */
  replyExcerpt?: ReplyExcerpt | null;
  /** The whole body, or a preview when `truncated` (read the rest with `message.read`). */
  body: string;
  truncated: boolean;
  bodyBytes: number;
  attachments: AttachmentRef[];
  revision: number;
  editedAt: string | null;
  receipts: { agent: string; state: InboxState }[];
  receiptCount: number;
}

/** `channel.history`: newest first; `nextCursor` goes towards older messages. */
export interface HistoryPage {
  status: 'page';
  channelId: string;
  messages: TimelineMessage[];
  readMarks: { principal: string; lastReadSeq: number; updatedAt: string }[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** `channel.message` notification. */
export interface ChannelMessageEvent {
  channelId: string;
  kind: string;
  message: TimelineMessage;
}

export type MessageReadReply =
  | {
      status: 'body';
      messageId: string;
      revision: number;
      bodyBytes: number;
      part: { offset: number; text: string };
      nextCursor: string | null;
    }
  | { status: 'state-changed'; messageId: string; revision: number };

export interface SentReply {
  message_id: string;
  channel_id: string;
}

/** What a reply quotes of the message it answers (same channel): author and first line, bounded. */
export interface ReplyExcerpt {
  messageId: string;
  seq: number;
  author: { id: string; name: string; kind: PrincipalKind | 'unknown' };
  excerpt: string;
  deleted: boolean;
}

/** `channel.receipts` notification: where each agent's copy of a message stands now. */
export interface ChannelReceiptsEvent {
  channelId: string;
  messageId: string;
  seq: number;
  receipts: { agent: string; state: InboxState }[];
  receiptCount: number;
}

/** `channel.joined` / `channel.updated` notifications (`subscribe {channelList: true}`). */
export interface ChannelListEntryEvent {
  channel: ChannelSummary;
}

/** `channel.unread` notification. */
export interface ChannelUnreadEvent {
  channelId: string;
  unread: number;
  /** The channel's sidebar sort key now (a message moves it up); absent from an older host. */
  activity?: number;
}

/** A host-run agent's state (`agent.status`, `agent.start|stop|restart`; docs/agents.md). */
export type RunState = 'starting' | 'running' | 'stopping' | 'stopped' | 'crashed' | 'no-host';

export interface AgentRun {
  agent: string;
  driver: 'claude' | 'codex';
  cwd: string;
  args: string[];
  desired: 'running' | 'stopped';
  state: RunState;
  pid: number | null;
  lastError: string | null;
  restarts: number;
  stateAt: string | null;
}

/** `agent.status {agent}`: for the owner and the agent's managers; `denied` for anyone else. */
export interface AgentStatus {
  agent: string;
  /** Null when the host does not run this agent. */
  run: AgentRun | null;
  /** The end of its log (whole lines, at most 8 KiB), when the log is on this host. */
  logTail: string | null;
}

export interface ConnectCommand {
  id: 'run' | 'hooks' | 'mcp';
  label: string;
  command: string;
}

/** `agent.connect {agent}`: the commands that attach a client to the agent on this host. */
export interface ConnectInfo {
  agent: string;
  sluice: string;
  pathStep: string | null;
  needsDatabaseUrl: boolean;
  claude: ConnectCommand[];
  codex: ConnectCommand[];
}

/** `channel.invitations`: groups the caller is invited to (consent before membership). */
export interface InvitationPage {
  invitations: {
    channel: { id: string; name: string; kind: 'dm' | 'group' };
    invitedBy: { id: string; name: string; kind: 'person' | 'agent' };
    createdAt: string;
  }[];
  nextCursor: string | null;
}

// Taken from the host's own types (a module with no imports), not restated.
export type {
  MessageStatus,
  RecipientState,
  RecipientStatus,
} from '../../src/host/messages/message-status-types.js';

// An approval request (`approval.list`, `approval.decide`, the `approval.changed` push), inferred
// from the host's own wire schema (src/surfaces/rpc/schemas.ts), not restated.
export type { Approval } from '../../src/surfaces/rpc/schemas.js';

/** `approval.changed {agent, approval}` on the agent's queue subscription. */
export interface ApprovalChangedEvent {
  agent: string;
  approval: import('../../src/surfaces/rpc/schemas.js').Approval;
}
