import { precompile } from '../precompiled.js';
import type { Db } from '../store.js';
import { findMessagesBySeqs, type MessageRow } from './messages.js';
import { pendingState } from './pending.js';

/** A candidate for a model's page: its keyset value (inbox position or message seq) and its message. */
export interface KeyedMessage {
  key: number;
  row: MessageRow;
}

/**
 * An agent's pending entries after `afterPosition`, FIFO, in the given channels, with their
 * messages (deleted ones left out). Keyset on the inbox position, walking inbox_pending (agent_id,
 * position; pending entries only): the cost follows the page, not the agent's history.
 */
export async function pendingMessagesAfter(
  db: Db,
  agentId: string,
  channelIds: readonly string[],
  afterPosition: number,
  limit: number,
): Promise<KeyedMessage[]> {
  if (channelIds.length === 0) return [];
  const rows = await PENDING_AFTER.all(db, agentId, channelIds, afterPosition, limit);
  return rows.map(({ position, ...row }) => ({ key: Number(position), row }));
}

// Every unread page: built once per number of channels (precompiled.ts).
const PENDING_AFTER = precompile(
  (db: Db, agentId: string, channelIds: readonly string[], afterPosition: number, limit: number) =>
    db
      .selectFrom('inbox')
      .innerJoin('messages', 'messages.seq', 'inbox.message_seq')
      .selectAll('messages')
      .select('inbox.position as position')
      .where('inbox.agent_id', '=', agentId)
      .where(pendingState('inbox.state'))
      .where('inbox.position', '>', afterPosition)
      .where('inbox.channel_id', 'in', channelIds)
      .where('messages.deleted_at', 'is', null)
      .orderBy('inbox.position', 'asc')
      .limit(limit),
);

/** Messages of the given channels before `beforeSeq`, newest first, deleted ones left out. */
export async function channelMessagesBefore(
  db: Db,
  channelIds: readonly string[],
  beforeSeq: number | undefined,
  limit: number,
): Promise<KeyedMessage[]> {
  if (channelIds.length === 0) return [];
  let q = db.selectFrom('messages').selectAll().where('messages.deleted_at', 'is', null);
  q =
    channelIds.length === 1
      ? q.where('channel_id', '=', channelIds[0] as string)
      : q.where('channel_id', 'in', channelIds);
  if (beforeSeq !== undefined) q = q.where('seq', '<', beforeSeq);
  const rows = await q.orderBy('seq', 'desc').limit(limit).execute();
  return rows.map((row) => ({ key: Number(row.seq), row }));
}

/** Messages by seq in the order given (search hits), each keyed by its seq; missing ones skipped. */
export async function messagesKeyedBySeq(db: Db, seqs: readonly number[]): Promise<KeyedMessage[]> {
  return (await findMessagesBySeqs(db, seqs)).map((row) => ({ key: Number(row.seq), row }));
}
