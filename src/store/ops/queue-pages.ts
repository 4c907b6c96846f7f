import { sql } from 'kysely';
import type { InboxState, MessageSource } from '../schema.js';
import type { Db } from '../store.js';
import { pendingState } from './pending.js';

/** One pending card's row: inbox metadata, the author's name and only the head of the body. */
export interface CardRow {
  position: number;
  message_id: string;
  channel_id: string;
  state: InboxState;
  source: MessageSource;
  body_bytes: number;
  created_at: string;
  returned_reason: string | null;
  failure_kind: string | null;
  author_name: string | null;
  head: string;
  attachments: string;
}

/** Which cards: an agent's pending entries in the given channels, keyset on position. */
export interface CardQuery {
  agentId: string;
  channelIds: readonly string[];
  source?: MessageSource | undefined;
  afterPosition?: number;
  beforePosition?: number;
  atPosition?: number;
  newestFirst: boolean;
  limit: number;
  /** Characters of the body to read for the preview (substr counts characters, ≤ 4 bytes each). */
  headChars: number;
}

/**
 * Pending cards in FIFO order (or reverse). Only the head of each body is read, so a page of
 * multi-MB bodies costs a page of previews, not the bodies.
 */
export async function loadCards(db: Db, q: CardQuery): Promise<CardRow[]> {
  if (q.channelIds.length === 0) return [];
  let query = db
    .selectFrom('inbox')
    .innerJoin('messages', 'messages.seq', 'inbox.message_seq')
    .leftJoin('principals', 'principals.id', 'messages.author_id')
    .select([
      'inbox.position',
      'inbox.message_id',
      'inbox.channel_id',
      'inbox.state',
      'inbox.source',
      'inbox.body_bytes',
      'inbox.created_at',
      'inbox.returned_reason',
      'inbox.failure_kind',
      'principals.name as author_name',
      sql<string>`substr(messages.body, 1, ${q.headChars})`.as('head'),
      'messages.attachments',
    ])
    .where('inbox.agent_id', '=', q.agentId)
    .where(pendingState('inbox.state'))
    .where('inbox.channel_id', 'in', q.channelIds);
  if (q.source !== undefined) query = query.where('inbox.source', '=', q.source);
  if (q.afterPosition !== undefined) query = query.where('inbox.position', '>', q.afterPosition);
  if (q.beforePosition !== undefined) query = query.where('inbox.position', '<', q.beforePosition);
  if (q.atPosition !== undefined) query = query.where('inbox.position', '=', q.atPosition);
  const rows = await query
    .orderBy('inbox.position', q.newestFirst ? 'desc' : 'asc')
    .limit(q.limit)
    .execute();
  return rows.map((r) => ({ ...r, position: Number(r.position), body_bytes: Number(r.body_bytes) }));
}

/**
 * The inbox position of a message in an agent's inbox, in any state. Found through the message's
 * id and the entry's (agent, message seq) key: inbox has no index on message_id, and filtering the
 * agent's entries by it would walk everything the agent ever received.
 */
export async function inboxPositionOf(
  db: Db,
  agentId: string,
  messageId: string,
): Promise<number | undefined> {
  const row = await db
    .selectFrom('messages')
    .innerJoin('inbox', 'inbox.message_seq', 'messages.seq')
    .select(['inbox.position'])
    .where('messages.id', '=', messageId)
    .where('inbox.agent_id', '=', agentId)
    .executeTakeFirst();
  return row ? Number(row.position) : undefined;
}

/** A queued message's entry state with its whole stored body and revision (for body parts); looked up as above. */
export async function queuedBody(
  db: Db,
  agentId: string,
  messageId: string,
): Promise<
  | { state: InboxState; channel_id: string; body: string; revision: number; deleted_at: string | null }
  | undefined
> {
  const row = await db
    .selectFrom('inbox')
    .innerJoin('messages', 'messages.seq', 'inbox.message_seq')
    .select(['inbox.state', 'inbox.channel_id', 'messages.body', 'messages.revision', 'messages.deleted_at'])
    .where('messages.id', '=', messageId)
    .where('inbox.agent_id', '=', agentId)
    .executeTakeFirst();
  return row ? { ...row, revision: Number(row.revision) } : undefined;
}
