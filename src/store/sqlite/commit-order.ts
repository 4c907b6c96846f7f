import { precompile } from '../precompiled.js';
import type { Db, EventRow } from '../store.js';

// SQLite commits one writer at a time (BEGIN IMMEDIATE; a group commit is one transaction), so
// events commit in seq order: a reader follows seq and never meets a lower seq committing late
// (PostgreSQL's sends commit in parallel: postgres/commit-order.ts).

/** Events after the event `afterSeq` in commit order (here seq order); at most `limit`. */
export function listCommittedEventsAfter(db: Db, afterSeq: number, limit: number): Promise<EventRow[]> {
  return EVENTS_AFTER.all(db, afterSeq, limit);
}

// The live hub reads this after every commit: built once (precompiled.ts).
const EVENTS_AFTER = precompile((db: Db, afterSeq: number, limit: number) =>
  db.selectFrom('events').selectAll().where('seq', '>', afterSeq).orderBy('seq').limit(limit),
);

/** The last event (0 for none): readers that start now continue after it. */
export async function lastCommittedEventSeq(db: Db): Promise<number> {
  const row = await LAST_EVENT.first(db);
  return Number(row?.max ?? 0);
}

// The live hub reads this after every commit while nobody listens (live.ts skipUnheard): built once.
const LAST_EVENT = precompile((db: Db) => db.selectFrom('events').select((eb) => eb.fn.max('seq').as('max')));
