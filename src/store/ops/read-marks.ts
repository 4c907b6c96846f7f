import type { ChannelKind } from '../schema.js';
import type { Db } from '../store.js';
import {
  type NewestMessage,
  newestColumn,
  OWN_MEMBERSHIP,
  onOwnMembership,
  parseNewest,
} from './sidebar-columns.js';

/** A principal's read mark in a channel (the seq read up to), if any. */
export async function findReadMarkSeq(
  db: Db,
  channelId: string,
  principalId: string,
): Promise<number | undefined> {
  const row = await db
    .selectFrom('read_marks')
    .select('last_read_seq')
    .where('channel_id', '=', channelId)
    .where('principal_id', '=', principalId)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.last_read_seq);
}

/**
 * Moves the mark forward to `seq` (creates it); a mark already at or past `seq` stays. Returns
 * where the mark is now and whether this call moved it: one statement when it moved (the upsert
 * returns only a row it wrote), one read more when it stayed.
 */
export async function advanceReadMark(
  db: Db,
  mark: { channelId: string; principalId: string; seq: number; at: string },
): Promise<{ lastReadSeq: number; moved: boolean }> {
  const written = await db
    .insertInto('read_marks')
    .values({
      channel_id: mark.channelId,
      principal_id: mark.principalId,
      last_read_seq: mark.seq,
      updated_at: mark.at,
    })
    .onConflict((oc) =>
      oc
        .columns(['channel_id', 'principal_id'])
        .doUpdateSet({ last_read_seq: mark.seq, updated_at: mark.at })
        .where('read_marks.last_read_seq', '<', mark.seq),
    )
    .returning('last_read_seq')
    .executeTakeFirst();
  if (written) return { lastReadSeq: Number(written.last_read_seq), moved: true };
  const stayed = await findReadMarkSeq(db, mark.channelId, mark.principalId);
  return { lastReadSeq: stayed ?? mark.seq, moved: false };
}

/** A channel's read marks, most advanced first, at most `limit`. */
export async function listReadMarkRows(db: Db, channelId: string, limit: number) {
  const rows = await db
    .selectFrom('read_marks')
    .select(['principal_id', 'last_read_seq', 'updated_at'])
    .where('channel_id', '=', channelId)
    .orderBy('last_read_seq', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    principalId: r.principal_id,
    lastReadSeq: Number(r.last_read_seq),
    updatedAt: r.updated_at,
  }));
}

/** A principal's current membership of a channel, with what its unread count walks. */
export interface UnreadWalkRow {
  channelId: string;
  kind: ChannelKind;
  joinedAt: string;
  /** The membership's activity seq (migration 017). */
  activity: number;
  /** The channel's newest live messages after the principal's read mark, newest first. */
  newest: NewestMessage[];
}

/**
 * The principal's current memberships among `channelIds`, each with the newest `max` live
 * messages after their read mark (sidebar-columns.ts, `newestColumn`), in one statement.
 * Channels the principal is not in are left out.
 */
export async function listUnreadWalks(
  db: Db,
  principalId: string,
  channelIds: readonly string[],
  max: number,
): Promise<UnreadWalkRow[]> {
  if (channelIds.length === 0) return [];
  const rows = await db
    .selectFrom('memberships')
    .innerJoin('channels', 'channels.id', 'memberships.channel_id')
    .leftJoin('read_marks', onOwnMembership)
    .select([
      'memberships.channel_id',
      'memberships.joined_at',
      'memberships.activity_seq',
      'channels.kind',
      newestColumn(db, OWN_MEMBERSHIP, max),
    ])
    .where('memberships.principal_id', '=', principalId)
    .where('memberships.channel_id', 'in', [...channelIds])
    .where('memberships.left_at', 'is', null)
    .execute();
  return rows.map((r) => ({
    channelId: r.channel_id,
    kind: r.kind,
    joinedAt: r.joined_at,
    activity: Number(r.activity_seq),
    newest: parseNewest(r.newest),
  }));
}
