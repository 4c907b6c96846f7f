import type { Selectable } from 'kysely';
import { precompile } from '../precompiled.js';
import type { InboxState, InboxTable, MessageSource } from '../schema.js';
import { type Db, dialectOf } from '../store.js';
import { isPendingList, pendingState } from './pending.js';

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

/** The position of the oldest entry in `state`, if any (index: agent_id, state, position). */
export async function firstPositionInState(
  db: Db,
  agentId: string,
  state: InboxState,
): Promise<InboxRow | undefined> {
  return db
    .selectFrom('inbox')
    .selectAll()
    .where('agent_id', '=', agentId)
    .where('state', '=', state)
    .orderBy('position', 'asc')
    .limit(1)
    .executeTakeFirst();
}

/** The newest pending entry a person sent (index: agent_id, source, state, position). */
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
