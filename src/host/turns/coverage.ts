import { appendProgressEvents } from '../../store/ops/message-status.js';
import { type CoverageRow, findCoverages, type TurnRow, upsertCoverages } from '../../store/ops/turns.js';
import type { Db } from '../../store/store.js';
import { announceCommit, type HostContext, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { openTurnOf } from './lifecycle.js';

export interface CoverageRead {
  messageSeq: number;
  sha256: string;
  /** UTF-16 offset where the returned slice starts (0 for whole messages). */
  offset: number;
  /** UTF-16 offset where it ends. */
  end: number;
  total: number;
}

/**
 * Records what the model just received in the agent's open turn (no open turn: a peek, nothing
 * recorded). Call it only once the client has the result (DESIGN.md I9), inside a transaction.
 */
export async function recordCoverage(
  db: Db,
  agentId: string,
  reads: readonly CoverageRead[],
  at: string = new Date().toISOString(),
): Promise<void> {
  if (reads.length === 0) return;
  const turn = await openTurnOf(db, agentId);
  if (!turn) return;
  await coverTurn(db, turn, reads, at);
}

/**
 * A driver handed a delivery to its client itself: what it carried whole joins the agent's open
 * turn, in one transaction with the open-turn lookup.
 */
export async function recordDeliveredCoverage(
  ctx: HostContext,
  agent: Principal,
  reads: readonly CoverageRead[],
): Promise<void> {
  if (reads.length === 0) return;
  const at = nowIso(ctx);
  await ctx.store.transaction((trx) => recordCoverage(trx, agent.id, reads, at));
  announceCommit(ctx);
}

/**
 * Adds received reads to a turn's coverage (and a `message.progress` event for each read that moved). A fragment counts only as the contiguous prefix
 * returned in this turn: a slice that starts at 0 (re)starts the prefix, one that starts where the
 * prefix ends extends it, and any other slice (resuming a chain begun in an earlier turn, or one
 * whose predecessor never reached the client) counts for nothing.
 */
export async function coverTurn(
  db: Db,
  turn: Pick<TurnRow, 'id' | 'agent_id'>,
  reads: readonly CoverageRead[],
  at: string,
): Promise<void> {
  const turnId = turn.id;
  // What the turn holds of each message, updated as the reads are taken in order (a result may
  // carry consecutive fragments of one message), then written in one statement.
  const held = new Map<number, CoverageRow>();
  for (const row of await findCoverages(
    db,
    turnId,
    reads.map((r) => r.messageSeq),
  )) {
    held.set(Number(row.message_seq), row);
  }
  const changed = new Map<number, CoverageRow>();
  for (const read of reads) {
    const prior = held.get(read.messageSeq);
    let prefix: number;
    if (read.offset === 0) prefix = read.end;
    else if (prior && prior.sha256 === read.sha256 && prior.prefix_units === read.offset) prefix = read.end;
    else continue;
    if (prior && prior.complete === 1 && prior.sha256 === read.sha256) continue;
    const row: CoverageRow = {
      turn_id: turnId,
      message_seq: read.messageSeq,
      sha256: read.sha256,
      prefix_units: prefix,
      total_units: read.total,
      complete: prefix >= read.total ? 1 : 0,
    };
    held.set(read.messageSeq, row);
    changed.set(read.messageSeq, row);
  }
  await upsertCoverages(db, [...changed.values()]);
  // The messages' status moved (offered → received): their senders' pages and chats follow.
  await appendProgressEvents(db, turn.agent_id, [...changed.keys()], at);
}
