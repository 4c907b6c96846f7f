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

/**
 * Migration 024: who drives each agent now (docs/drivers.md, "One agent, one driver"). One row per
 * agent at most: the driver process that holds it (`holder`, a random id), where it runs (pid,
 * machine, home), whether `sluice serve` runs it, and until when its lease holds (renewed while it
 * runs; a driver that dies stops renewing).
 */
export const AGENT_DRIVERS = `create table agent_drivers (agent_id text primary key references principals(id),
  holder text not null, client text not null, pid integer not null, machine text not null, home text not null,
  supervised integer not null, started_at text not null, held_until text not null)`;
