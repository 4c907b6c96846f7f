import { sql } from 'kysely';
import type { Db } from '../store.js';
import { pendingState } from './pending.js';

/** Per message: turns that carried it without settling, and why the last one ended. */
export interface DispatchAttempt {
  messageSeq: number;
  attempts: number;
  lastReason: string | null;
}

/** The agent's inbox entries for these message ids (ids it has no entry for are skipped). */
export async function inboxSeqsOf(
  db: Db,
  agentId: string,
  messageIds: readonly string[],
): Promise<{ id: string; seq: number }[]> {
  if (messageIds.length === 0) return [];
  const rows = await db
    .selectFrom('inbox')
    .innerJoin('messages', 'messages.seq', 'inbox.message_seq')
    .select(['messages.id', 'inbox.message_seq'])
    .where('inbox.agent_id', '=', agentId)
    .where('messages.id', 'in', messageIds)
    .execute();
  return rows.map((r) => ({ id: r.id, seq: Number(r.message_seq) }));
}

/** Adds one attempt to each message (creating its row). */
export async function addDispatchAttempt(
  db: Db,
  agentId: string,
  seqs: readonly number[],
  at: string,
): Promise<void> {
  if (seqs.length === 0) return;
  await db
    .insertInto('dispatch_attempts')
    .values(
      seqs.map((s) => ({
        agent_id: agentId,
        message_seq: s,
        attempts: 1,
        last_reason: null,
        updated_at: at,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['agent_id', 'message_seq']).doUpdateSet({
        attempts: sql`dispatch_attempts.attempts + 1`,
        updated_at: at,
      }),
    )
    .execute();
}

/** Takes back one attempt (a turn stopped on purpose is nobody's fault); rows that reach 0 go. */
export async function removeDispatchAttempt(db: Db, agentId: string, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await db
    .updateTable('dispatch_attempts')
    .set({ attempts: sql`attempts - 1` })
    .where('agent_id', '=', agentId)
    .where('message_seq', 'in', seqs)
    .execute();
  await db
    .deleteFrom('dispatch_attempts')
    .where('agent_id', '=', agentId)
    .where('message_seq', 'in', seqs)
    .where('attempts', '<=', 0)
    .execute();
}

/** Records why the latest unsettled turn carrying these messages ended. */
export async function setDispatchAttemptReason(
  db: Db,
  agentId: string,
  seqs: readonly number[],
  reason: string,
): Promise<void> {
  if (seqs.length === 0) return;
  await db
    .updateTable('dispatch_attempts')
    .set({ last_reason: reason })
    .where('agent_id', '=', agentId)
    .where('message_seq', 'in', seqs)
    .execute();
}

/** Forgets the attempts of these messages (a turn carrying them settled, or they were returned). */
export async function clearDispatchAttempts(db: Db, agentId: string, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await db
    .deleteFrom('dispatch_attempts')
    .where('agent_id', '=', agentId)
    .where('message_seq', 'in', seqs)
    .execute();
}

/** The attempts recorded for these messages (absent: none). */
export async function listDispatchAttempts(
  db: Db,
  agentId: string,
  seqs: readonly number[],
): Promise<DispatchAttempt[]> {
  if (seqs.length === 0) return [];
  const rows = await db
    .selectFrom('dispatch_attempts')
    .select(['message_seq', 'attempts', 'last_reason'])
    .where('agent_id', '=', agentId)
    .where('message_seq', 'in', seqs)
    .execute();
  return rows.map((r) => ({
    messageSeq: Number(r.message_seq),
    attempts: Number(r.attempts),
    lastReason: r.last_reason,
  }));
}

/** Waiting entries of the agent with at least `limit` attempts, oldest first. */
export async function listExhaustedAttempts(
  db: Db,
  agentId: string,
  limit: number,
): Promise<DispatchAttempt[]> {
  const rows = await db
    .selectFrom('dispatch_attempts')
    .innerJoin('inbox', (j) =>
      j
        .onRef('inbox.agent_id', '=', 'dispatch_attempts.agent_id')
        .onRef('inbox.message_seq', '=', 'dispatch_attempts.message_seq'),
    )
    .select(['dispatch_attempts.message_seq', 'dispatch_attempts.attempts', 'dispatch_attempts.last_reason'])
    .where('dispatch_attempts.agent_id', '=', agentId)
    .where('dispatch_attempts.attempts', '>=', limit)
    .where('inbox.state', '=', 'waiting')
    .orderBy('inbox.position')
    .execute();
  return rows.map((r) => ({
    messageSeq: Number(r.message_seq),
    attempts: Number(r.attempts),
    lastReason: r.last_reason,
  }));
}

/** Drops rows of messages that are no longer pending for the agent (handled, archived, withdrawn). */
export async function pruneDispatchAttempts(db: Db, agentId: string): Promise<void> {
  await db
    .deleteFrom('dispatch_attempts')
    .where('agent_id', '=', agentId)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('inbox')
            .select('inbox.position')
            .whereRef('inbox.agent_id', '=', 'dispatch_attempts.agent_id')
            .whereRef('inbox.message_seq', '=', 'dispatch_attempts.message_seq')
            .where(pendingState('inbox.state')),
        ),
      ),
    )
    .execute();
}
