import { precompile } from '../precompiled.js';
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
  | 'agent.run'
  /** A principal's pending invitations changed (`agent_id` holds the invitee, person or agent). */
  | 'invitation.changed'
  /**
   * A message moved for one agent without an inbox transition (`agent_id`, `channel_id`,
   * `message_id`): offered to its model, or received in part or whole. Its status changed.
   */
  | 'message.progress'
  /** An approval request of an agent (`agent_id`) was made or decided; `message_id` holds the approval id. */
  | 'approval.changed';

export interface NewEvent {
  kind: EventKind;
  agent_id?: string | null;
  channel_id?: string | null;
  message_id?: string | null;
  created_at: string;
}

// Most writes append one event: that insert is built once (precompiled.ts).
const APPEND_ONE = precompile(
  (
    db: Db,
    kind: EventKind,
    agentId: string | null,
    channelId: string | null,
    messageId: string | null,
    createdAt: string,
  ) =>
    db.insertInto('events').values({
      kind,
      agent_id: agentId,
      channel_id: channelId,
      message_id: messageId,
      created_at: createdAt,
    }),
);

export async function appendEvent(db: Db, event: NewEvent): Promise<void> {
  await APPEND_ONE.run(
    db,
    event.kind,
    event.agent_id ?? null,
    event.channel_id ?? null,
    event.message_id ?? null,
    event.created_at,
  );
}

/** Appends several events in one statement (a send's per-queue events and its channel event). */
export async function appendEvents(db: Db, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  if (events.length === 1) return appendEvent(db, events[0] as NewEvent);
  // Every column given (null too), so each call with as many events runs the same statement.
  const rows = events.map((event) => ({
    kind: event.kind,
    agent_id: event.agent_id ?? null,
    channel_id: event.channel_id ?? null,
    message_id: event.message_id ?? null,
    created_at: event.created_at,
  }));
  await APPEND_MANY.run(db, rows);
}

// A settled turn logs an event per message it moved: built once per count (precompiled.ts).
const APPEND_MANY = precompile((db: Db, rows: readonly Required<NewEvent>[]) =>
  db.insertInto('events').values([...rows]),
);

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
