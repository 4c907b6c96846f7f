import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import { type Precompiled, precompile } from '../precompiled.js';
import type { MessageSource, QueuesTable } from '../schema.js';
import type { Db } from '../store.js';

export type QueueRow = Selectable<QueuesTable>;

export async function insertQueue(db: Db, agentId: string, generation: string): Promise<void> {
  await db
    .insertInto('queues')
    .values({
      agent_id: agentId,
      generation,
      revision: 0,
      paused: 0,
      paused_reason: null,
      next_position: 1,
      waiting: 0,
      returned: 0,
      pending_person: 0,
      pending_agent: 0,
      pending_unknown: 0,
    })
    .onConflict((oc) => oc.column('agent_id').doNothing())
    .execute();
}

export async function findQueue(db: Db, agentId: string): Promise<QueueRow | undefined> {
  return FIND_QUEUE.first(db, agentId);
}

// Every unread page binds its cursor to the queue's generation: built once (precompiled.ts).
const FIND_QUEUE = precompile((db: Db, agentId: string) =>
  db.selectFrom('queues').selectAll().where('agent_id', '=', agentId),
);

export interface CounterDelta {
  waiting?: number;
  returned?: number;
  source?: MessageSource;
  /** Change of the pending count for `source` (waiting ∪ returned). */
  pending?: number;
}

const SOURCE_COLUMN = {
  person: 'pending_person',
  agent: 'pending_agent',
  unknown: 'pending_unknown',
} as const;

type CounterColumn = 'waiting' | 'returned' | (typeof SOURCE_COLUMN)[MessageSource];

/** One counter update per set of columns it moves (a handful), built once (precompiled.ts). */
const counterUpdates = new Map<string, Precompiled<unknown[], unknown>>();

function counterUpdate(columns: readonly CounterColumn[]): Precompiled<unknown[], unknown> {
  const key = columns.join(',');
  let update = counterUpdates.get(key);
  if (!update) {
    update = precompile((db: Db, agentId: unknown, ...by: unknown[]) => {
      const set: Record<string, unknown> = { revision: sql`revision + 1` };
      for (const [i, column] of columns.entries()) set[column] = sql`${sql.ref(column)} + ${by[i]}`;
      return db
        .updateTable('queues')
        .set(set)
        .where('agent_id', '=', agentId as string);
    }, 1 + columns.length);
    counterUpdates.set(key, update);
  }
  return update;
}

/** Applies counter deltas and bumps the queue revision in one statement. */
export async function applyQueueDelta(db: Db, agentId: string, delta: CounterDelta): Promise<void> {
  await applyQueueDeltas(db, agentId, [delta]);
}

/**
 * Applies the sum of several counter deltas (entries of one agent moved together) and bumps the
 * queue revision once, in one statement.
 */
export async function applyQueueDeltas(
  db: Db,
  agentId: string,
  deltas: readonly CounterDelta[],
): Promise<void> {
  const sums = new Map<CounterColumn, number>();
  const add = (column: CounterColumn, n: number | undefined) => {
    if (n) sums.set(column, (sums.get(column) ?? 0) + n);
  };
  for (const delta of deltas) {
    add('waiting', delta.waiting);
    add('returned', delta.returned);
    if (delta.source) add(SOURCE_COLUMN[delta.source], delta.pending);
  }
  const moved = [...sums].filter(([, n]) => n !== 0);
  await counterUpdate(moved.map(([column]) => column)).run(db, agentId, ...moved.map(([, n]) => n));
}

export async function setPaused(
  db: Db,
  agentId: string,
  paused: boolean,
  reason: string | null,
): Promise<void> {
  await db
    .updateTable('queues')
    .set({ paused: paused ? 1 : 0, paused_reason: paused ? reason : null, revision: sql`revision + 1` })
    .where('agent_id', '=', agentId)
    .execute();
}
