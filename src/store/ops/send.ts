import { type Db, dialectOf, type SentMessageRow } from '../store.js';

export type { SentMessageRow };

/**
 * Stores a message from a current member of its channel and fans it out: the message, one inbox
 * entry per other agent member (FIFO positions and counters taken from `queues`), one
 * `queue.changed` event per entry and one `message.created`, in a fixed number of statements
 * whatever the number of recipients (the search index follows the message row by trigger or
 * expression index, in the same transaction). SQLite runs four statements (sqlite/send.ts);
 * PostgreSQL one server function call, `sluice_send`, which also takes the shared write lock
 * (postgres/send.ts). Run it inside a write transaction, with `linkMessageMedia` if it has
 * attachments. Returns the message's seq, or `undefined` when the author is no current member
 * (nothing stored).
 */
export async function storeAndFanOut(db: Db, m: SentMessageRow): Promise<number | undefined> {
  return dialectOf(db).storeAndFanOut(db, m);
}
