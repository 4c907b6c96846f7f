import type { Db } from '../store.js';

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
