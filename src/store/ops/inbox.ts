import { type RawBuilder, type Selectable, type SqlBool, sql } from 'kysely';
import { readableEntrySql } from '../../core/pending.js';
import { precompile } from '../precompiled.js';
import type { InboxState, InboxTable, MessageSource } from '../schema.js';
import { type Db, dialectOf } from '../store.js';
import { isPendingList, pendingState } from './pending.js';
import type { QueueRow } from './queues.js';

export type InboxRow = Selectable<InboxTable>;

/**
 * Inside a transaction, where the dialect locks the rows it reads (PostgreSQL), the entry is read
 * FOR UPDATE: callers decide a state change from what they read, and two hosts archiving or
 * settling the same entry must not both act on a stale copy (SQLite's BEGIN IMMEDIATE already
 * serialises writers, and has no FOR UPDATE).
 */
export function findInboxEntry(db: Db, agentId: string, messageSeq: number): Promise<InboxRow | undefined> {
  return (locksRowsForWrite(db) ? FIND_ENTRY_FOR_UPDATE : FIND_ENTRY).first(db, agentId, messageSeq);
}

// Settling a turn reads and moves each message it covers: built once (precompiled.ts).
const findEntry = (db: Db, agentId: string, messageSeq: number) =>
  db.selectFrom('inbox').selectAll().where('agent_id', '=', agentId).where('message_seq', '=', messageSeq);
const FIND_ENTRY = precompile(findEntry);
const FIND_ENTRY_FOR_UPDATE = precompile((db: Db, agentId: string, messageSeq: number) =>
  findEntry(db, agentId, messageSeq).forUpdate(),
);

/**
 * The agent's entries for several messages in one statement (settling a turn reads every message
 * it covered), read FOR UPDATE inside a PostgreSQL transaction as {@link findInboxEntry}. In no
 * particular order: sorting by position would lead SQLite to walk the agent's whole inbox in
 * position order instead of looking each message up (inbox_by_message). A message the agent has
 * no entry for is left out.
 */
export async function findInboxEntries(
  db: Db,
  agentId: string,
  messageSeqs: readonly number[],
): Promise<InboxRow[]> {
  if (messageSeqs.length === 0) return [];
  const seqs = [...new Set(messageSeqs)];
  return (locksRowsForWrite(db) ? ENTRIES_FOR_UPDATE : ENTRIES).all(db, agentId, seqs);
}

// Settling a turn reads every entry it covered: built once per list length (precompiled.ts).
const entries = (db: Db, agentId: string, seqs: readonly number[]) =>
  db.selectFrom('inbox').selectAll().where('agent_id', '=', agentId).where('message_seq', 'in', seqs);
const ENTRIES = precompile(entries);
const ENTRIES_FOR_UPDATE = precompile((db: Db, agentId: string, seqs: readonly number[]) =>
  entries(db, agentId, seqs).forUpdate(),
);

function locksRowsForWrite(db: Db): boolean {
  return db.isTransaction && dialectOf(db).locksRowsRead;
}

export interface PendingFilter {
  afterPosition?: number | undefined;
  beforePosition?: number | undefined;
  channelId?: string | undefined;
  channelIds?: readonly string[] | undefined;
  source?: MessageSource | undefined;
  states?: readonly InboxState[] | undefined;
  authorId?: string | undefined;
  newestFirst?: boolean;
  limit: number;
}

/** Inbox entries in FIFO order (or reverse), pending by default; keyset on position. */
export async function listInboxEntries(db: Db, agentId: string, f: PendingFilter): Promise<InboxRow[]> {
  let q = db
    .selectFrom('inbox')
    .selectAll('inbox')
    .where('inbox.agent_id', '=', agentId)
    .where((eb) =>
      f.states === undefined || isPendingList(f.states)
        ? pendingState('inbox.state')
        : eb('inbox.state', 'in', f.states),
    );
  if (f.afterPosition !== undefined) q = q.where('inbox.position', '>', f.afterPosition);
  if (f.beforePosition !== undefined) q = q.where('inbox.position', '<', f.beforePosition);
  if (f.channelId !== undefined) q = q.where('inbox.channel_id', '=', f.channelId);
  if (f.channelIds !== undefined) {
    if (f.channelIds.length === 0) return [];
    q = q.where('inbox.channel_id', 'in', f.channelIds);
  }
  if (f.source !== undefined) q = q.where('inbox.source', '=', f.source);
  if (f.authorId !== undefined) {
    const authorId = f.authorId;
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('messages')
          .select('messages.seq')
          .whereRef('messages.seq', '=', 'inbox.message_seq')
          .where('messages.author_id', '=', authorId),
      ),
    );
  }
  return q
    .orderBy('inbox.position', f.newestFirst ? 'desc' : 'asc')
    .limit(f.limit)
    .execute();
}

/** What an entry's state change writes. */
export interface StatePatch {
  state: InboxState;
  updated_at: string;
  returned_reason: string | null;
  failure_kind: string | null;
}

export async function updateInboxState(
  db: Db,
  agentId: string,
  position: number,
  patch: StatePatch,
): Promise<void> {
  await updateInboxStates(db, agentId, [position], patch);
}

/** {@link updateInboxState} for several entries of one agent, all moving to the same state. */
export async function updateInboxStates(
  db: Db,
  agentId: string,
  positions: readonly number[],
  patch: StatePatch,
): Promise<void> {
  if (positions.length === 0) return;
  await UPDATE_STATES.run(
    db,
    agentId,
    positions,
    patch.state,
    patch.updated_at,
    patch.returned_reason,
    patch.failure_kind,
  );
}

const UPDATE_STATES = precompile(
  (
    db: Db,
    agentId: string,
    positions: readonly number[],
    state: InboxState,
    updatedAt: string,
    returnedReason: string | null,
    failureKind: string | null,
  ) =>
    db
      .updateTable('inbox')
      .set({ state, updated_at: updatedAt, returned_reason: returnedReason, failure_kind: failureKind })
      .where('agent_id', '=', agentId)
      .where('position', 'in', positions),
);

/**
 * An entry the agent may read now: its channel is one the agent is a current member of
 * (core/pending.ts {@link readableEntrySql}, the rule the hook's reader applies too).
 */
export function readableEntry(): RawBuilder<SqlBool> {
  return sql<SqlBool>`${sql.raw(readableEntrySql('inbox'))}`;
}

/** Pending entries by state and by who sent them. */
export interface PendingCounts {
  waiting: number;
  returned: number;
  person: number;
  agent: number;
  unknown: number;
}

/**
 * The agent's pending entries it may read now, counted: the queue's counters (kept by every send
 * and state change) less the entries of channels it left, which stay pending but hidden until it
 * rejoins (I3, I6). Every surface that says how much is pending counts with this. Constant work
 * for an agent that never left a channel; otherwise one walk of its pending entries.
 */
export async function readablePendingCounts(db: Db, queue: QueueRow): Promise<PendingCounts> {
  const counts: PendingCounts = {
    waiting: queue.waiting,
    returned: queue.returned,
    person: queue.pending_person,
    agent: queue.pending_agent,
    unknown: queue.pending_unknown,
  };
  if (queue.waiting + queue.returned === 0 || !(await hasLeftAChannel(db, queue.agent_id))) return counts;
  const hidden = await db
    .selectFrom('inbox')
    .select(['state', 'source', (eb) => eb.fn.countAll<number>().as('n')])
    .where('agent_id', '=', queue.agent_id)
    .where(pendingState('state'))
    .where(sql<SqlBool>`not ${readableEntry()}`)
    .groupBy(['state', 'source'])
    .execute();
  for (const row of hidden) {
    const n = Number(row.n);
    if (row.state === 'waiting') counts.waiting -= n;
    if (row.state === 'returned') counts.returned -= n;
    counts[row.source] -= n;
  }
  return counts;
}

/** Whether the principal has left (or was removed from) any channel (index: memberships_by_principal). */
async function hasLeftAChannel(db: Db, principalId: string): Promise<boolean> {
  const row = await db
    .selectFrom('memberships')
    .select('channel_id')
    .where('principal_id', '=', principalId)
    .where('left_at', 'is not', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * The oldest entry in `state` the agent may read now, if any (index: agent_id, state, position):
 * a returned entry of a channel it left does not block its queue.
 */
export async function firstReadableInState(
  db: Db,
  agentId: string,
  state: InboxState,
): Promise<InboxRow | undefined> {
  return db
    .selectFrom('inbox')
    .selectAll()
    .where('agent_id', '=', agentId)
    .where('state', '=', state)
    .where(readableEntry())
    .orderBy('position', 'asc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * The newest pending entry a person sent that the agent may read now (index: agent_id, source,
 * state, position).
 */
export async function newestPendingPersonEntry(
  db: Db,
  agentId: string,
): Promise<Pick<InboxRow, 'message_id' | 'channel_id'> | undefined> {
  return db
    .selectFrom('inbox')
    .select(['message_id', 'channel_id'])
    .where('agent_id', '=', agentId)
    .where('source', '=', 'person')
    .where(pendingState('state'))
    .where(readableEntry())
    .orderBy('position', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * An edited message's new size on every pending inbox entry that carries it (settled entries keep
 * the size they were settled at); returns the agents whose entries changed, for their queue events.
 */
export async function resizePendingEntries(
  db: Db,
  messageSeq: number,
  bodyBytes: number,
  at: string,
): Promise<string[]> {
  const rows = await db
    .updateTable('inbox')
    .set({ body_bytes: bodyBytes, updated_at: at })
    .where('message_seq', '=', messageSeq)
    .where(pendingState('state'))
    .returning('agent_id')
    .execute();
  return rows.map((r) => r.agent_id);
}
