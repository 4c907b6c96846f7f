import type { AgentPresence } from '../../core/wire/index.js';
import { latestTurn } from '../../store/ops/presence.js';
import type { Db } from '../../store/store.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { AgentPresence };

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
