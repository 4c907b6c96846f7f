import { precompile } from '../precompiled.js';
import type { InboxState } from '../schema.js';
import type { Db } from '../store.js';
import { appendEvents } from './events.js';

// The records a message's status is read from. Every one of them is written by the consumption
// rule itself (inbox transitions, turn coverage and offers, dispatch attempts, replies): this
// module only reads them, so the status can never disagree with what a turn will consume.

/** One recipient agent's inbox entry for a message, with the agent's name. */
export interface RecipientEntryRow {
  agent_id: string;
  name: string;
  state: InboxState;
  updated_at: string;
  returned_reason: string | null;
  failure_kind: string | null;
}

/** Every inbox entry of message `seq` (one per addressed agent), agents in name order. */
export async function findRecipientEntries(db: Db, seq: number): Promise<RecipientEntryRow[]> {
  return db
    .selectFrom('inbox')
    .innerJoin('principals', 'principals.id', 'inbox.agent_id')
    .select([
      'inbox.agent_id',
      'principals.name',
      'inbox.state',
      'inbox.updated_at',
      'inbox.returned_reason',
      'inbox.failure_kind',
    ])
    .where('inbox.message_seq', '=', seq)
    .orderBy('principals.name')
    .execute();
}

/** What the agents' open turns hold of message `seq`: confirmed coverage, then unconfirmed offers. */
export interface OpenTurnHoldRow {
  agent_id: string;
  started_at: string;
  /** Coverage: the projection's SHA-256 and whether the whole of it was received. Null: none. */
  sha256: string | null;
  complete: number | null;
  /** True when a `seen` turn offered the message and its driver has not confirmed it yet. */
  offered: boolean;
}

/** For each of `agentIds` with an open turn: what that turn holds of message `seq`. */
export async function findOpenTurnHolds(
  db: Db,
  agentIds: readonly string[],
  seq: number,
): Promise<OpenTurnHoldRow[]> {
  if (agentIds.length === 0) return [];
  const turns = await db
    .selectFrom('turns')
    .select(['id', 'agent_id', 'started_at'])
    .where('agent_id', 'in', [...agentIds])
    .where('state', '=', 'open')
    .execute();
  if (turns.length === 0) return [];
  const turnIds = turns.map((t) => t.id);
  const coverage = await db
    .selectFrom('coverage')
    .select(['turn_id', 'sha256', 'complete'])
    .where('turn_id', 'in', turnIds)
    .where('message_seq', '=', seq)
    .execute();
  const offers = await db
    .selectFrom('coverage_offers')
    .select('turn_id')
    .where('turn_id', 'in', turnIds)
    .where('message_seq', '=', seq)
    .execute();
  const offeredTurns = new Set(offers.map((o) => o.turn_id));
  return turns.map((t) => {
    const c = coverage.find((row) => row.turn_id === t.id);
    return {
      agent_id: t.agent_id,
      started_at: t.started_at,
      sha256: c?.sha256 ?? null,
      complete: c === undefined ? null : Number(c.complete),
      offered: offeredTurns.has(t.id),
    };
  });
}

/** Deliveries that carried message `seq` to each agent in turns that have not settled yet. */
export async function findCarriedAttempts(
  db: Db,
  agentIds: readonly string[],
  seq: number,
): Promise<{ agent_id: string; updated_at: string }[]> {
  if (agentIds.length === 0) return [];
  return db
    .selectFrom('dispatch_attempts')
    .select(['agent_id', 'updated_at'])
    .where('agent_id', 'in', [...agentIds])
    .where('message_seq', '=', seq)
    .where('attempts', '>', 0)
    .execute();
}

/**
 * The first live reply each of `authorIds` wrote to message `messageId`, through the index of
 * replies (migration 022): an old message in a busy channel costs what its replies cost. A reply
 * is always in its parent's channel (sends refuse any other), so the channel needs no condition.
 */
export async function findFirstReplies(
  db: Db,
  messageId: string,
  authorIds: readonly string[],
): Promise<{ author_id: string; created_at: string; id: string }[]> {
  if (authorIds.length === 0) return [];
  const rows = await db
    .selectFrom('messages')
    .select(['author_id', 'created_at', 'id', 'seq'])
    .where('reply_to', '=', messageId)
    .where('deleted_at', 'is', null)
    .where('author_id', 'in', [...authorIds])
    .orderBy('seq')
    .execute();
  const first = new Map<string, { author_id: string; created_at: string; id: string }>();
  for (const r of rows) {
    if (!first.has(r.author_id))
      first.set(r.author_id, { author_id: r.author_id, created_at: r.created_at, id: r.id });
  }
  return [...first.values()];
}

// Every read in a turn logs its messages' progress: built once per count (precompiled.ts).
const PLACES_BY_SEQS = precompile((db: Db, seqs: readonly number[]) =>
  db.selectFrom('messages').select(['id', 'channel_id']).where('seq', 'in', seqs),
);

/**
 * Tells live readers that messages `seqs` moved for agent `agentId` without an inbox transition
 * (offered, or received in part or whole): one `message.progress` event each, naming the message
 * and its channel, in the caller's transaction.
 */
export async function appendProgressEvents(
  db: Db,
  agentId: string,
  seqs: readonly number[],
  at: string,
): Promise<void> {
  if (seqs.length === 0) return;
  const rows = await PLACES_BY_SEQS.all(db, [...new Set(seqs)]);
  await appendEvents(
    db,
    rows.map((r) => ({
      kind: 'message.progress' as const,
      agent_id: agentId,
      channel_id: r.channel_id,
      message_id: r.id,
      created_at: at,
    })),
  );
}
