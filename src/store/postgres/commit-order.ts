import { sql } from 'kysely';
import type { Db, EventRow } from '../store.js';
import { WRITE_LOCK_CLASS } from './migrations.js';

// Sends commit in parallel, so a lower event seq can commit after a higher one (migration
// 008_commit_order). Readers take only final events — of transactions below the oldest Sluice
// writer of this schema still running: nothing can commit among them any more — in (xid, seq)
// order, and name their place by the seq of the last event they read; its xid says where that is
// in commit order.
//
// Not `pg_snapshot_xmin`: that is the oldest transaction of the whole server, so any open
// transaction of any application in any database (an idle-in-transaction session) held every live
// feed back for as long as it stayed open (found in review). The bound is read first, in a
// statement of its own: the lowest xid running at that statement's snapshot that holds this
// schema's write lock when the locks are read, else that snapshot's xmax. Every Sluice write takes
// the lock (shared or exclusive) before its first write and keeps it to its end, so a writer below
// the bound has ended before the events are read, in a later statement with a later snapshot; a
// writer that had no xid yet gets one above the xmax. Other transactions never count, and the
// bound never moves back (a read after "nothing held back" sees at least as much: the clause
// "ended since the snapshot" an earlier version had made it dip when an unrelated transaction ended
// mid-read, and a multihost test then missed a message until the next commit).
const WRITE_LOCK_HOLDERS = sql`
  select own.transactionid from pg_locks lock
    join pg_locks own on own.pid = lock.pid and own.locktype = 'transactionid'
      and own.mode = 'ExclusiveLock' and own.granted
   where lock.locktype = 'advisory' and lock.objsubid = 2
     and lock.database = (select oid from pg_database where datname = current_database())
     and lock.classid = ${sql.lit(WRITE_LOCK_CLASS)}::oid and lock.objid = hashtext(current_schema())::oid`;

/** The commit-order bound: events of transactions below it are final (see above). */
async function finalBound(db: Db): Promise<string> {
  const rows = await sql<{ bound: string }>`
    select coalesce(
      (select min(x) from pg_snapshot_xip(pg_current_snapshot()) as x where x::xid in (${WRITE_LOCK_HOLDERS})),
      pg_snapshot_xmax(pg_current_snapshot()))::text as bound`.execute(db);
  const bound = rows.rows[0]?.bound;
  if (bound === undefined) throw new Error('no commit-order bound');
  return bound;
}

/** Final events after the event `afterSeq` in commit order (xid, then seq); at most `limit`. */
export async function listCommittedEventsAfter(db: Db, afterSeq: number, limit: number): Promise<EventRow[]> {
  const bound = await finalBound(db);
  const rows = await sql<EventRow>`
    select seq, kind, agent_id, channel_id, message_id, created_at from events
    where xid < ${bound}::xid8
      and (xid, seq) > (coalesce((select xid from events where seq = ${afterSeq}), '0'::xid8), ${afterSeq})
    order by xid, seq limit ${limit}`.execute(db);
  return rows.rows;
}

/** The last final event in commit order (0 for none): readers that start now continue after it. */
export async function lastCommittedEventSeq(db: Db): Promise<number> {
  const bound = await finalBound(db);
  const rows = await sql<{ seq: number }>`
    select seq from events where xid < ${bound}::xid8 order by xid desc, seq desc limit 1`.execute(db);
  return Number(rows.rows[0]?.seq ?? 0);
}

/**
 * True while committed events wait behind an older transaction still running. Its commit may not
 * notify (it appended no event, or it is in another schema), so the listener asks again shortly.
 */
export async function eventsHeldBack(db: Db): Promise<boolean> {
  const bound = await finalBound(db);
  const rows = await sql<{ held: boolean }>`
    select exists (select 1 from events where xid >= ${bound}::xid8) as held`.execute(db);
  return rows.rows[0]?.held === true;
}
