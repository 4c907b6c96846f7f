import { sql } from 'kysely';
import type { Db } from '../store.js';

/** The agent's most recently started turn (open or settled), for its presence on the page. */
export async function latestTurn(
  db: Db,
  agentId: string,
): Promise<
  | {
      state: string;
      receipt: string;
      started_at: string;
      ended_at: string | null;
      failure_kind: string | null;
    }
  | undefined
> {
  // Served by turns_by_start (agent_id, started_at), migration 009: one probe, newest first. Turns
  // that started in the same millisecond (a superseded turn and the one that replaced it) are put
  // in order by the rest, sorting only that tie: the open one (at most one per agent) is the
  // newest, then the one that ended last, then the greater id, so every backend picks the same.
  return db
    .selectFrom('turns')
    .select(['state', 'receipt', 'started_at', 'ended_at', 'failure_kind'])
    .where('agent_id', '=', agentId)
    .orderBy('started_at', 'desc')
    .orderBy(sql`state = 'open'`, 'desc')
    .orderBy('ended_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}
