import type { InboxState, MessageSource } from './kinds.js';

// An agent's queue as a device reads it (DESIGN.md §3.3): summary, card pages and body parts.

export interface QueueSummary {
  agent: string;
  generation: string;
  revision: number;
  total: number;
  /** Messages ever put in this queue, settled or not: 0 means the agent has had none yet. */
  totalQueued: number;
  counts: { person: number; agent: number; unknown: number };
  newestPersonMessageId: string | null;
  blockingReturnedMessageId: string | null;
  resumeAvailable: boolean;
  paused: boolean;
}

/**
 * What the host knows of an agent's activity, from its turns (docs/web.md, "Presence"):
 * `driven` — `sluice drive` is running a turn now (an open turn whose reads a driver confirms);
 * `in-turn` — a turn is open that a hook-woken session or `sluice turn begin` opened;
 * `idle` — no turn is open. `lastActivityAt` is when the latest turn started or ended (null when
 * the agent never had a turn). A session that only reads or waits without a turn leaves no trace.
 */
export interface AgentPresence {
  state: 'driven' | 'in-turn' | 'idle';
  lastActivityAt: string | null;
  /** How the latest turn ended, when it ended: `succeeded`, `failed` or `abandoned`. */
  lastOutcome: string | null;
  /** Whether the latest turn was a driver's (`sluice drive`). */
  driver: boolean;
}

/** The `queue.summary` reply: the summary, the agent's presence, whether the reader may pause. */
export type QueueSummaryReply = QueueSummary & { presence: AgentPresence; canPause: boolean };

/** One queue card as a device sees it: metadata and a short preview, never the whole body. */
export interface QueueCard {
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
  /** How many files the message carries (0 when none): the card's attachment mark. */
  attachmentCount: number;
  returnedReason?: string;
  returnedFailure?: { kind: string };
}

/** Why a `queue.page` cursor no longer holds. */
export type StaleReason = 'generation' | 'filter' | 'agent' | 'anchor-gone' | 'anchor-moved';

/** The `queue.page` reply. */
export type QueuePageResult =
  | {
      status: 'page';
      generation: string;
      revision: number;
      rows: QueueCard[];
      hasMore: { before: boolean; after: boolean };
      previousCursor: string | null;
      nextCursor: string | null;
    }
  | { status: 'stale'; generation: string; revision: number; reason: StaleReason };

export type BodyStatus = 'gone' | 'handed-off' | 'state-changed';

/** The `queue.read` reply: one part of a pending card's body, or why there is none. */
export type QueueReadResult =
  | {
      status: 'body';
      messageId: string;
      bodyBytes: number;
      part: { offset: number; text: string };
      nextCursor: string | null;
    }
  | { status: BodyStatus; messageId: string; state: InboxState | null };
