import { CompiledQuery } from 'kysely';
import type { MessageSource } from '../schema.js';
import type { Db, SentMessageRow } from '../store.js';

// The send is the hot path: its statements are fixed texts run as compiled queries (no query
// building per send), and better-sqlite3 reuses their prepared statements (connect.ts).
async function run<R>(db: Db, text: string, params: readonly unknown[]): Promise<R[]> {
  const result = await db.executeQuery<R>(CompiledQuery.raw(text, [...params]));
  return result.rows;
}

// Inserted only while the author is a current member: the membership check and the insert are one
// statement, so no removal can slip between them.
const INSERT_MESSAGE = `insert into messages (id, channel_id, author_id, created_at, body, body_bytes, subject,
  reply_to, actions, attachments, origin, revision, edited_at, deleted_at)
  select ?, ?, ?, ?, ?, cast(? as integer), ?, ?, ?, ?, ?, 1, null, null
  where exists (select 1 from memberships where channel_id = ? and principal_id = ? and left_at is null)
  returning seq`;

// The recipients: every agent member but the author.
const RECIPIENTS = `select m.principal_id from memberships m join principals p on p.id = m.principal_id
  where m.channel_id = ? and m.left_at is null and p.kind = 'agent' and m.principal_id <> ?`;

// Counters first: the row update takes each recipient's next FIFO position before the entries
// read it.
const COUNT_COLUMN = {
  person: 'pending_person',
  agent: 'pending_agent',
  unknown: 'pending_unknown',
} as const;
const TAKE_POSITIONS = Object.fromEntries(
  Object.entries(COUNT_COLUMN).map(([source, column]) => [
    source,
    `update queues set next_position = next_position + 1, waiting = waiting + 1, revision = revision + 1,
      ${column} = ${column} + 1 where agent_id in (${RECIPIENTS})`,
  ]),
) as Record<MessageSource, string>;

// One entry per recipient at the position just taken.
const FAN_OUT = `insert into inbox (agent_id, position, message_seq, message_id, channel_id, state, source,
  body_bytes, created_at, updated_at, returned_reason, failure_kind)
  select q.agent_id, q.next_position - 1, cast(? as bigint), ?, ?, 'waiting', ?, cast(? as integer), ?, ?, null, null
  from queues q where q.agent_id in (${RECIPIENTS})`;

const LOG_EVENTS = `insert into events (kind, agent_id, channel_id, message_id, created_at)
  select 'queue.changed', agent_id, null, ?, ? from inbox where message_seq = ?
  union all select 'message.created', null, ?, ?, ?`;

/**
 * The send in four statements whatever the number of recipients: the message, one inbox entry per
 * other agent member (FIFO positions and counters taken from `queues`), one `queue.changed` event
 * per entry and one `message.created` (the FTS index follows the message row by trigger). Returns
 * the message's seq, or `undefined` when the author is no current member (nothing stored).
 */
export async function storeAndFanOut(db: Db, m: SentMessageRow): Promise<number | undefined> {
  const [row] = await run<{ seq: number | string }>(db, INSERT_MESSAGE, [
    m.id,
    m.channel_id,
    m.author_id,
    m.created_at,
    m.body,
    m.body_bytes,
    m.subject,
    m.reply_to,
    m.actions,
    m.attachments,
    m.origin,
    m.channel_id,
    m.author_id,
  ]);
  if (!row) return undefined;
  const seq = Number(row.seq);
  const at = m.created_at;
  await run(db, TAKE_POSITIONS[m.source], [m.channel_id, m.author_id]);
  await run(db, FAN_OUT, [
    seq,
    m.id,
    m.channel_id,
    m.source,
    m.body_bytes,
    at,
    at,
    m.channel_id,
    m.author_id,
  ]);
  await run(db, LOG_EVENTS, [m.id, at, seq, m.channel_id, m.id, at]);
  return seq;
}
