import { sql } from 'kysely';
import type { SearchIndex } from '../store.js';

/** Turns free text into an FTS5 query of quoted terms, so user input is never FTS syntax. */
export function toFts5Query(query: string): string {
  const terms = query.match(/[\p{L}\p{N}_]+/gu) ?? [];
  return terms
    .slice(0, 32)
    .map((t) => `"${t}"`)
    .join(' ');
}

export const sqliteSearchIndex: SearchIndex = {
  async search(db, q) {
    const match = toFts5Query(q.query);
    if (match === '' || q.channelIds.length === 0) return [];
    const rows = await sql<{ seq: number }>`
      select m.seq as seq from messages_fts f join messages m on m.seq = f.rowid
      where messages_fts match ${match}
        and m.channel_id in (${sql.join(q.channelIds)})
        and m.deleted_at is null
        ${q.beforeSeq === undefined ? sql`` : sql`and m.seq < ${q.beforeSeq}`}
      order by m.seq desc limit ${q.limit}`.execute(db);
    return rows.rows.map((r) => r.seq);
  },
};
