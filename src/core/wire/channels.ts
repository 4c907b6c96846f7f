import type { InboxState, PrincipalKind, PrincipalRef } from './kinds.js';

// Channels, their members and invitations, and their history as people read it.

export interface ChannelSummary {
  id: string;
  name: string;
  kind: 'dm' | 'group';
  /** The first current members by name (up to 50); `memberCount` counts them all. */
  members: PrincipalRef[];
  memberCount: number;
}

/** The `channel.list` reply (by name). */
export interface ChannelPage {
  channels: ChannelSummary[];
  /** Continues after the last channel listed; null when this page reached the end. */
  nextCursor: string | null;
}

/** A `channel.list {order: "activity"}` row: the summary, the caller's activity key and unread count. */
export interface ChannelActivityRow extends ChannelSummary {
  /** Sort key, newest first (ties: the channel id, descending): a seq, comparable across rows. */
  activity: number;
  unread: number;
}

/** The `channel.list {order: "activity"}` reply: the most recent first. */
export interface ChannelActivityPage {
  channels: ChannelActivityRow[];
  nextCursor: string | null;
}

/** The `channel.members` reply. */
export interface MemberPage {
  channelId: string;
  members: PrincipalRef[];
  /** Every current member, not just this page's. */
  memberCount: number;
  /** Continues after the last member listed; null when this page reached the end. */
  nextCursor: string | null;
}

/** A group the caller is invited to (consent before membership). */
export interface InvitationSummary {
  channel: { id: string; name: string; kind: 'dm' | 'group' };
  invitedBy: PrincipalRef;
  createdAt: string;
}

/** The `channel.invitations` reply. */
export interface InvitationPage {
  invitations: InvitationSummary[];
  nextCursor: string | null;
}

export interface AttachmentRef {
  attachment_id: string;
  name: string;
  mime: string;
  size: number;
}

/** What a reply quotes of the message it answers (always in the same channel). */
export interface ReplyExcerpt {
  messageId: string;
  seq: number;
  author: { id: string; name: string; kind: PrincipalKind | 'unknown' };
  /** The parent's first non-empty line, cut to 160 UTF-16 units (then `…`); '' when deleted. */
  excerpt: string;
  deleted: boolean;
}

/** One message as people see it: the presentation record, with receipts and revisions. */
export interface HistoryMessage {
  messageId: string;
  seq: number;
  channelId: string;
  author: { id: string; name: string; kind: PrincipalKind | 'unknown' };
  createdAt: string;
  subject: string | null;
  replyTo: string | null;
  /** The quoted parent of a reply (null when not a reply, or the parent is gone). */
  replyExcerpt: ReplyExcerpt | null;
  body: string;
  /** True when `body` is a preview: read the whole text with message.read. */
  truncated: boolean;
  bodyBytes: number;
  attachments: AttachmentRef[];
  actions?: unknown[];
  revision: number;
  editedAt: string | null;
  /** Delivery receipts: where each addressed agent's copy stands (≤ 16; see receiptCount). */
  receipts: { agent: string; state: InboxState }[];
  receiptCount: number;
}

/** The `channel.history` reply: newest first; `nextCursor` goes towards older messages. */
export interface HistoryPage {
  status: 'page';
  channelId: string;
  messages: HistoryMessage[];
  readMarks: { principal: string; lastReadSeq: number; updatedAt: string }[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** The `message.read` reply: one part of a message's body, or that it changed since the cursor. */
export type MessageReadResult =
  | {
      status: 'body';
      messageId: string;
      revision: number;
      bodyBytes: number;
      part: { offset: number; text: string };
      nextCursor: string | null;
    }
  | { status: 'state-changed'; messageId: string; revision: number };
