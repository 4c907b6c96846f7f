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
  // Served by turns_by_start (agent_id, started_at), migration 009: one probe, newest first.
  return db
    .selectFrom('turns')
    .select(['state', 'receipt', 'started_at', 'ended_at', 'failure_kind'])
    .where('agent_id', '=', agentId)
    .orderBy('started_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}
