import { SqliteAdapter, sql } from 'kysely';
import type { StoreDialect, StoreDialectAdapter } from '../store.js';
import { lastCommittedEventSeq, listCommittedEventsAfter } from './commit-order.js';
import { storeAndFanOut } from './send.js';

/** What SQLite does its own way under src/store/ops (store.ts, `StoreDialect`). */
export const sqliteStoreDialect: StoreDialect = {
  locksRowsRead: false,
  listEventsAfter: listCommittedEventsAfter,
  lastEventSeq: lastCommittedEventSeq,
  storeAndFanOut,
  jsonArrayAgg: (entries, orderBy) =>
    sql<string>`json_group_array(json_object(${sql.join(entries.flatMap(([key, value]) => [sql.lit(key), value]))})${orderBy ? sql` order by ${orderBy}` : sql``})`,
};

/** Kysely's SQLite adapter, carrying the store's dialect to every handle (`dialectOf`). */
export class SqliteStoreAdapter extends SqliteAdapter implements StoreDialectAdapter {
  readonly storeDialect = sqliteStoreDialect;
}
