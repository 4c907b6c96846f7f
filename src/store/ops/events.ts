import type { Selectable } from 'kysely';
import type { EventsTable } from '../schema.js';
import type { Db } from '../store.js';

export type EventRow = Selectable<EventsTable>;

export type EventKind =
  | 'message.created'
  | 'message.edited'
  | 'queue.changed'
  | 'channel.created'
  | 'channel.members'
  | 'turn.changed';

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

export async function listEventsAfter(db: Db, afterSeq: number, limit: number): Promise<EventRow[]> {
  return db
    .selectFrom('events')
    .selectAll()
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

export async function lastEventSeq(db: Db): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('seq').as('max'))
    .executeTakeFirst();
  return Number(row?.max ?? 0);
}
