import { sql } from 'kysely';
import type { Db } from '../store.js';

/** The start of a replied-to message: enough for a one-line excerpt, never the whole body. */
export interface ReplyHeadRow {
  id: string;
  seq: number;
  author_id: string;
  /** The first `headChars` characters of the body (code points in both dialects). */
  head: string;
  deleted_at: string | null;
}

/** Heads of the messages `ids` (reply parents), reading at most `headChars` characters of each body. */
export async function findReplyHeads(
  db: Db,
  ids: readonly string[],
  headChars: number,
): Promise<ReplyHeadRow[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('messages')
    .select(['id', 'seq', 'author_id', 'deleted_at', sql<string>`substr(body, 1, ${headChars})`.as('head')])
    .where('id', 'in', [...ids])
    .execute();
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}

/** Receipt rows (agent name and state) of messages by seq, agents in name order. */
export async function findReceiptRows(db: Db, seqs: readonly number[]) {
  if (seqs.length === 0) return [];
  return db
    .selectFrom('inbox')
    .innerJoin('principals', 'principals.id', 'inbox.agent_id')
    .select(['inbox.message_seq', 'inbox.state', 'principals.name'])
    .where('inbox.message_seq', 'in', [...seqs])
    .orderBy('principals.name')
    .execute();
}

/** Ids of a channel's current members. */
export async function findCurrentMemberIds(db: Db, channelId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('memberships')
    .select('principal_id')
    .where('channel_id', '=', channelId)
    .where('left_at', 'is', null)
    .execute();
  return rows.map((r) => r.principal_id);
}
