import { PostgresAdapter, sql } from 'kysely';
import type { StoreDialect, StoreDialectAdapter } from '../store.js';
import { lastCommittedEventSeq, listCommittedEventsAfter } from './commit-order.js';
import { storeAndFanOut } from './send.js';

/** What PostgreSQL does its own way under src/store/ops (store.ts, `StoreDialect`). */
export const postgresStoreDialect: StoreDialect = {
  // Callers decide a state change from what they read: two hosts archiving or settling the same
  // inbox entry must not both act on a stale copy (connect.ts, `transaction`).
  locksRowsRead: true,
  listEventsAfter: listCommittedEventsAfter,
  lastEventSeq: lastCommittedEventSeq,
  storeAndFanOut,
  // json_agg is null over no rows; as text, as SQLite's aggregate gives it.
  jsonArrayAgg: (entries, orderBy) =>
    sql<string>`coalesce(json_agg(json_build_object(${sql.join(entries.flatMap(([key, value]) => [sql.lit(key), value]))})${orderBy ? sql` order by ${orderBy}` : sql``})::text, '[]')`,
};

/** Kysely's PostgreSQL adapter, carrying the store's dialect to every handle (`dialectOf`). */
export class PostgresStoreAdapter extends PostgresAdapter implements StoreDialectAdapter {
  readonly storeDialect = postgresStoreDialect;
}
