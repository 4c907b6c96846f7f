// Migrations whose SQL is the same on SQLite and PostgreSQL: both migration lists run these
// statements under the same number. Released statements never change (add the next number).

/**
 * Migration 021: each agent's pending entries in inbox order, and nothing else, with and without
 * a source. The list is PENDING_STATES (core/pending.ts) in that order, written as the queries
 * write it (store/ops/pending.ts): SQLite uses a partial index only for a condition written the
 * same. The source index replaces inbox_by_source, whose only readers were pending walks.
 */
export const INBOX_PENDING = [
  `create index inbox_pending on inbox (agent_id, position) where state in ('waiting', 'returned')`,
  `create index inbox_pending_by_source on inbox (agent_id, source, position) where state in ('waiting', 'returned')`,
  `drop index inbox_by_source`,
];

/**
 * Migration 022: replies by the message they answer, for `message.status` (who answered). Only
 * replies have an entry. Without it the lookup walked every later message of the channel.
 */
export const MESSAGES_BY_REPLY = `create index messages_by_reply on messages (reply_to, seq) where reply_to is not null`;
