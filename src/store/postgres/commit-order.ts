import { sql } from 'kysely';
import type { EventRow } from '../ops/events.js';
import type { Db } from '../store.js';

// Sends commit in parallel, so a lower event seq can commit after a higher one (migration
// 008_commit_order). Readers take only the events of transactions below the oldest still running
// — final: nothing can commit among them any more — in (xid, seq) order, and name their place by
// the seq of the last event they read; its xid says where that is in commit order.
const FINAL = sql`xid < pg_snapshot_xmin(pg_current_snapshot())`;

/** Final events after the event `afterSeq` in commit order (xid, then seq); at most `limit`. */
export async function listCommittedEventsAfter(db: Db, afterSeq: number, limit: number): Promise<EventRow[]> {
  const rows = await sql<EventRow>`
    select seq, kind, agent_id, channel_id, message_id, created_at from events
    where ${FINAL}
      and (xid, seq) > (coalesce((select xid from events where seq = ${afterSeq}), '0'::xid8), ${afterSeq})
    order by xid, seq limit ${limit}`.execute(db);
  return rows.rows;
}

/** The last final event in commit order (0 for none): readers that start now continue after it. */
export async function lastCommittedEventSeq(db: Db): Promise<number> {
  const rows = await sql<{ seq: number }>`
    select seq from events where ${FINAL} order by xid desc, seq desc limit 1`.execute(db);
  return Number(rows.rows[0]?.seq ?? 0);
}

/**
 * True while committed events wait behind an older transaction still running. Its commit may not
 * notify (it appended no event, or it is in another schema), so the listener asks again shortly.
 */
export async function eventsHeldBack(db: Db): Promise<boolean> {
  const rows = await sql<{ held: boolean }>`
    select exists (select 1 from events where xid >= pg_snapshot_xmin(pg_current_snapshot())) as held`.execute(
    db,
  );
  return rows.rows[0]?.held === true;
}
