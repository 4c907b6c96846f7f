import { latestTurn } from '../../store/ops/presence.js';
import type { Db } from '../../store/store.js';

/**
 * What the host knows of an agent's activity, from its turns (docs/web.md, "Presence"):
 * `driven` — `sluice drive` is running a turn now (an open turn whose reads a driver confirms);
 * `in-turn` — a turn is open that a hook-woken session or `sluice turn begin` opened;
 * `idle` — no turn is open. `lastActivityAt` is when the latest turn started or ended (null when
 * the agent never had a turn). A session that only reads or waits without a turn leaves no trace.
 */
export interface AgentPresence {
  state: 'driven' | 'in-turn' | 'idle';
  lastActivityAt: string | null;
  /** How the latest turn ended, when it ended: `succeeded`, `failed` or `abandoned`. */
  lastOutcome: string | null;
  /** Whether the latest turn was a driver's (`sluice drive`). */
  driver: boolean;
}

export async function agentPresence(db: Db, agentId: string): Promise<AgentPresence> {
  const turn = await latestTurn(db, agentId);
  if (!turn) return { state: 'idle', lastActivityAt: null, lastOutcome: null, driver: false };
  const driver = turn.receipt === 'seen';
  if (turn.state === 'open')
    return {
      state: driver ? 'driven' : 'in-turn',
      lastActivityAt: turn.started_at,
      lastOutcome: null,
      driver,
    };
  return { state: 'idle', lastActivityAt: turn.ended_at ?? turn.started_at, lastOutcome: turn.state, driver };
}
