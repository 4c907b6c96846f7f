import { SqliteAdapter } from 'kysely';
import type { StoreDialect, StoreDialectAdapter } from '../store.js';
import { lastCommittedEventSeq, listCommittedEventsAfter } from './commit-order.js';
import { storeAndFanOut } from './send.js';

/** What SQLite does its own way under src/store/ops (store.ts, `StoreDialect`). */
export const sqliteStoreDialect: StoreDialect = {
  locksRowsRead: false,
  listEventsAfter: listCommittedEventsAfter,
  lastEventSeq: lastCommittedEventSeq,
  storeAndFanOut,
};

/** Kysely's SQLite adapter, carrying the store's dialect to every handle (`dialectOf`). */
export class SqliteStoreAdapter extends SqliteAdapter implements StoreDialectAdapter {
  readonly storeDialect = sqliteStoreDialect;
}
