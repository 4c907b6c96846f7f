// The JSON-RPC shapes of DESIGN.md §3.3 as the page reads them, taken type-only from the host's
// own declarations (src/core/wire: types only, no Node imports), never restated: a reply the host
// changes fails `npm run typecheck` here, not the page at run time.
import type * as Host from '../../src/core/wire/index.js';

export type {
  AgentPresence,
  Approval,
  AttachmentRef,
  ChannelCreated,
  Hello,
  InboxState,
  MessageSource,
  PrincipalKind,
  PrincipalListPage,
  PrincipalRef,
  ReplyExcerpt,
  RunState,
  SentReply,
} from '../../src/core/wire/index.js';

/**
 * A queue summary: `queue.summary` replies carry `presence` and `canPause`, `queue.changed` pushes
 * `presence` only; an older host sent no `totalQueued` (the empty queue's line allows for it).
 */
export type QueueSummary = Omit<Host.QueueSummary, 'totalQueued'> &
  Partial<Pick<Host.QueueSummaryReply, 'totalQueued' | 'presence' | 'canPause'>>;
export type QueueRow = Host.QueueCard;
export type QueuePageReply = Host.QueuePageResult;
export type QueueReadReply = Host.QueueReadResult;

/** A sidebar row: from `channel.list` (with `unread`), by activity or from a live push (`activity` too). */
export type ChannelSummary = Host.ChannelSummary &
  Partial<Pick<Host.ChannelActivityRow, 'unread' | 'activity'>>;
/** `channel.list`: one bounded page; follow `nextCursor` for more. */
export interface ChannelListPage {
  channels: ChannelSummary[];
  nextCursor: string | null;
}
export type ChannelMembersPage = Host.MemberPage;
export type InvitationPage = Host.InvitationPage;
/** One message of a channel's human presentation record (a history row or a live event). */
export type TimelineMessage = Host.HistoryMessage;
export type HistoryPage = Host.HistoryPage;
export type MessageReadReply = Host.MessageReadResult;
export type AgentRun = Host.AgentRun;
export type AgentStatus = Host.AgentStatusReply;
export type ConnectCommand = Host.ConnectCommand;
export type ConnectInfo = Host.ConnectInfo;

// The live notifications (`RpcClient.on`) and their params, from the host's own map of them.
export type { LiveMessageStub, LiveMethod, LiveNotifications } from '../../src/core/wire/index.js';
// Taken from the host's own types (a module with no imports), not restated.
export type {
  MessageStatus,
  RecipientState,
  RecipientStatus,
} from '../../src/host/messages/message-status-types.js';

/**
 * A timeline row: a message's presentation record, or a live stub of one too large for the reply
 * budget even compact (no author, no body: the row offers to read it with `message.read`).
 */
export type TimelineEntry = TimelineMessage | Host.LiveMessageStub;
