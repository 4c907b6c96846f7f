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

export interface Hello {
  protocol: string;
  capabilities: string[];
  limits: Record<string, number>;
  principal: PrincipalRef;
}

export interface QueueSummary {
  agent: string;
  generation: string;
  revision: number;
  total: number;
  counts: { person: number; agent: number; unknown: number };
  newestPersonMessageId: string | null;
  blockingReturnedMessageId: string | null;
  resumeAvailable: boolean;
  paused: boolean;
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
  returnedReason?: string | null;
  returnedFailure?: { kind: string } | null;
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
  | { status: 'stale'; generation: string; revision: number };

export type QueueReadReply =
  | {
      status: 'body';
      messageId: string;
      bodyBytes: number;
      part: { offset: number; text: string };
      nextCursor: string | null;
    }
  | { status: 'gone' | 'handed-off' | 'state-changed'; messageId?: string; state?: string };

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
  members: PrincipalRef[];
}

/** One message of a channel's human presentation record (history page row or live event). */
export interface TimelineMessage {
  id: string;
  channel_id: string;
  author: { id?: string; name: string; kind?: PrincipalKind };
  created_at: string;
  body: string;
  subject?: string | null;
  attachments: AttachmentRef[];
  revision?: number;
  edited_at?: string | null;
  deleted_at?: string | null;
}

export interface HistoryPage {
  messages: TimelineMessage[];
  nextCursor: string | null;
}

export interface SentReply {
  message_id: string;
  channel_id: string;
}
