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

/**
 * The newest `limit` live messages of each channel after its `afterSeq`, without bodies (what an
 * unread count walks; the (channel_id, seq) index serves each walk). One statement for many
 * channels, the walks joined by UNION ALL: a page's unread counts cost one round trip, not one
 * per row. Rows come in no particular order.
 */
export async function listNewestAfterMany(
  db: Db,
  walks: readonly { channelId: string; afterSeq: number }[],
  limit: number,
) {
  if (walks.length === 0) return [];
  // Each walk in its own FROM (a compound SELECT's members may not have their own LIMIT), written
  // as one template: the query builder took longer to build 30 walks than the database to run them.
  const walk = (w: { channelId: string; afterSeq: number }) =>
    sql`select * from (select channel_id, seq, author_id, created_at from messages
      where channel_id = ${w.channelId} and seq > ${w.afterSeq} and deleted_at is null
      order by seq desc limit ${limit}) as w`;
  const query = sql<{
    channel_id: string;
    seq: number | string;
    author_id: string;
    created_at: string;
  }>`${sql.join(walks.map(walk), sql` union all `)}`;
  const { rows } = await query.execute(db);
  return rows.map((r) => ({
    channel_id: r.channel_id,
    seq: Number(r.seq),
    author_id: r.author_id,
    created_at: r.created_at,
  }));
}

/** A principal's current memberships (join time, read mark, channel kind), for the channels given. */
export async function findActiveMemberships(db: Db, principalId: string, channelIds: readonly string[]) {
  if (channelIds.length === 0) return [];
  return db
    .selectFrom('memberships')
    .leftJoin('read_marks', (join) =>
      join
        .onRef('read_marks.channel_id', '=', 'memberships.channel_id')
        .onRef('read_marks.principal_id', '=', 'memberships.principal_id'),
    )
    .innerJoin('channels', 'channels.id', 'memberships.channel_id')
    .select([
      'memberships.channel_id',
      'memberships.joined_at',
      'memberships.activity_seq',
      'read_marks.last_read_seq',
      'channels.kind',
    ])
    .where('memberships.principal_id', '=', principalId)
    .where('memberships.channel_id', 'in', [...channelIds])
    .where('memberships.left_at', 'is', null)
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
