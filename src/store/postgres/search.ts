import { sql } from 'kysely';
import type { SearchIndex } from '../store.js';
import { SEARCH_DOCUMENT } from './migrations.js';

/**
 * The same terms SQLite's FTS5 query would use (letters, digits and `_` runs, at most 32), joined
 * for `plainto_tsquery`: user input is never tsquery syntax, and every term must match.
 */
export function toPlainQuery(query: string): string {
  const terms = query.match(/[\p{L}\p{N}_]+/gu) ?? [];
  return terms.slice(0, 32).join(' ');
}

/** PostgreSQL text search ('simple' configuration) over the GIN expression index, newest first. */
export const postgresSearchIndex: SearchIndex = {
  async search(db, q) {
    const terms = toPlainQuery(q.query);
    if (terms === '' || q.channelIds.length === 0) return [];
    const rows = await sql<{ seq: number }>`
      select seq from messages
      where ${sql.raw(SEARCH_DOCUMENT)} @@ plainto_tsquery('simple'::regconfig, ${terms})
        and channel_id in (${sql.join(q.channelIds)})
        and deleted_at is null
        ${q.beforeSeq === undefined ? sql`` : sql`and seq < ${q.beforeSeq}`}
      order by seq desc limit ${q.limit}`.execute(db);
    return rows.rows.map((r) => Number(r.seq));
  },
};
