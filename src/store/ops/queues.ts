import type { Selectable } from 'kysely';
import { sql } from 'kysely';
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
  return db.selectFrom('queues').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
}

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

/** Applies counter deltas and bumps the queue revision in one statement. */
export async function applyQueueDelta(db: Db, agentId: string, delta: CounterDelta): Promise<void> {
  const set: Record<string, unknown> = { revision: sql`revision + 1` };
  if (delta.waiting) set.waiting = sql`waiting + ${delta.waiting}`;
  if (delta.returned) set.returned = sql`returned + ${delta.returned}`;
  if (delta.pending && delta.source) {
    const column = SOURCE_COLUMN[delta.source];
    set[column] = sql`${sql.ref(column)} + ${delta.pending}`;
  }
  await db.updateTable('queues').set(set).where('agent_id', '=', agentId).execute();
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
