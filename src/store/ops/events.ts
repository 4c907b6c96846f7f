import { type Db, dialectOf, type EventRow } from '../store.js';

export type { EventRow };

export type EventKind =
  | 'message.created'
  | 'message.edited'
  | 'queue.changed'
  | 'channel.created'
  | 'channel.members'
  | 'turn.changed'
  /** A principal's read mark in a channel moved (`agent_id` holds that principal, person or agent). */
  | 'read.marked'
  /** An agent was added or its managers changed (`agent_id`): who lists it as theirs may change. */
  | 'agent.managers'
  /** An agent's run spec changed or was asked to start, stop or restart (`agent_id`: the agent). */
  | 'agent.run';

export interface NewEvent {
  kind: EventKind;
  agent_id?: string | null;
  channel_id?: string | null;
  message_id?: string | null;
  created_at: string;
}

export async function appendEvent(db: Db, event: NewEvent): Promise<void> {
  await appendEvents(db, [event]);
}

/** Appends several events in one statement (a send's per-queue events and its channel event). */
export async function appendEvents(db: Db, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db
    .insertInto('events')
    .values(
      events.map((event) => ({
        kind: event.kind,
        agent_id: event.agent_id ?? null,
        channel_id: event.channel_id ?? null,
        message_id: event.message_id ?? null,
        created_at: event.created_at,
      })),
    )
    .execute();
}

/**
 * Events after the event `afterSeq`, in commit order. SQLite commits one writer at a time, so that
 * is seq order; PostgreSQL sends commit in parallel and readers follow their transactions
 * (postgres/commit-order.ts): a live feed never skips an event that committed late.
 */
export async function listEventsAfter(db: Db, afterSeq: number, limit: number): Promise<EventRow[]> {
  return dialectOf(db).listEventsAfter(db, afterSeq, limit);
}

/** Where a reader starting now begins: the last event it need not see (commit order, as above). */
export async function lastEventSeq(db: Db): Promise<number> {
  return dialectOf(db).lastEventSeq(db);
}
