import { sha256Hex } from '../../core/fragment.js';
import {
  deleteCoverageOffers,
  findCoverageOffers,
  insertCoverageOffers,
} from '../../store/ops/coverage-offers.js';
import { appendProgressEvents } from '../../store/ops/message-status.js';
import { findTurn } from '../../store/ops/turns.js';
import type { TurnReceipt } from '../../store/schema.js';
import type { Db } from '../../store/store.js';
import { announceCommit, type HostContext, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { type CoverageRead, coverTurn } from './coverage.js';
import { openTurnOf } from './lifecycle.js';

/**
 * What a read would add to its turn's coverage once its result reaches the client (DESIGN.md I9).
 * A read records nothing by itself: the surface that hands the result over confirms it.
 */
export interface PendingReceipt {
  agentId: string;
  turnId: string;
  /** The turn's rule: `written` turns are confirmed by the transport, `seen` turns by a driver. */
  rule: TurnReceipt;
  /** SHA-256 of the exact result text the client is given. */
  resultSha256: string;
  reads: readonly CoverageRead[];
}

/**
 * Prepares the receipt of a read that carries `reads` in `resultText`. No open turn: a peek, no
 * receipt. In a `seen` turn the coverage is stored now as an offer keyed by the result's SHA-256
 * (the driver that confirms it runs in another process); in a `written` turn nothing is stored
 * until the transport confirms. `reads` may be given as a function: it is called only in an open
 * turn (a peek does not hash what it returns).
 */
export async function offerReads(
  ctx: HostContext,
  agent: Principal,
  resultText: string,
  given: readonly CoverageRead[] | (() => readonly CoverageRead[]),
): Promise<PendingReceipt | undefined> {
  if (agent.kind !== 'agent' || (Array.isArray(given) && given.length === 0)) return undefined;
  const turn = await openTurnOf(ctx.store.db, agent.id);
  if (!turn) return undefined;
  const reads = typeof given === 'function' ? given() : given;
  if (reads.length === 0) return undefined;
  const receipt: PendingReceipt = {
    agentId: agent.id,
    turnId: turn.id,
    rule: turn.receipt,
    resultSha256: sha256Hex(resultText),
    reads,
  };
  if (turn.receipt === 'seen') await offerToTurn(ctx, agent, turn.id, receipt.resultSha256, reads);
  return receipt;
}

/**
 * Stores `reads` as offers of turn `turnId`, keyed by the SHA-256 of the result that carries them:
 * they join the turn only when a driver sees exactly that result in its client's stream
 * ({@link confirmSeen}). False (nothing stored) when the turn is no longer the agent's open turn.
 */
export async function offerToTurn(
  ctx: HostContext,
  agent: Principal,
  turnId: string,
  resultSha256: string,
  reads: readonly CoverageRead[],
): Promise<boolean> {
  if (reads.length === 0) return false;
  return announced(ctx, async (trx) => {
    const current = await findTurn(trx, turnId);
    if (current?.state !== 'open' || current.agent_id !== agent.id) return false;
    await insertCoverageOffers(
      trx,
      reads.map((r) => ({
        turn_id: turnId,
        result_sha256: resultSha256,
        message_seq: r.messageSeq,
        sha256: r.sha256,
        offset_units: r.offset,
        end_units: r.end,
        total_units: r.total,
      })),
    );
    // Offered to the model: the messages' status moved from stored to offered.
    await appendProgressEvents(
      trx,
      agent.id,
      reads.map((r) => r.messageSeq),
      nowIso(ctx),
    );
    return true;
  });
}

/** Forgets what turn `turnId` offered with the result whose SHA-256 is given (it never reached the client). */
export async function withdrawOffers(ctx: HostContext, turnId: string, resultSha256: string): Promise<void> {
  await ctx.store.transaction((trx) => deleteCoverageOffers(trx, turnId, resultSha256));
}

/**
 * The transport handed the result over completely (HTTP response finished, stdout write done):
 * in a `written` turn that is still open, its reads join the coverage. A `seen` turn waits for its
 * driver instead. Returns whether coverage was recorded.
 */
export async function confirmWritten(ctx: HostContext, receipt: PendingReceipt): Promise<boolean> {
  if (receipt.rule !== 'written') return false;
  return announced(ctx, async (trx) => {
    const turn = await findTurn(trx, receipt.turnId);
    if (turn?.state !== 'open' || turn.agent_id !== receipt.agentId) return false;
    await coverTurn(trx, turn, receipt.reads, nowIso(ctx));
    return true;
  });
}

/**
 * A driver saw `resultText` in its client's own output stream during turn `turnId`: the coverage
 * a read offered with exactly that text joins the turn. Text no read offered (another tool's
 * output, an altered or cut result) confirms nothing. Returns whether anything was confirmed.
 */
export async function confirmSeen(
  ctx: HostContext,
  agent: Principal,
  turnId: string,
  resultText: string,
): Promise<boolean> {
  const resultSha256 = sha256Hex(resultText);
  return announced(ctx, async (trx) => {
    const turn = await findTurn(trx, turnId);
    if (turn?.state !== 'open' || turn.agent_id !== agent.id) return false;
    const offers = await findCoverageOffers(trx, turnId, resultSha256);
    if (offers.length === 0) return false;
    await coverTurn(
      trx,
      turn,
      offers.map((o) => ({
        messageSeq: Number(o.message_seq),
        sha256: o.sha256,
        offset: o.offset_units,
        end: o.end_units,
        total: o.total_units,
      })),
      nowIso(ctx),
    );
    await deleteCoverageOffers(trx, turnId, resultSha256);
    return true;
  });
}

/**
 * For a caller that is itself the client (an in-process reader, a test): it holds the result the
 * moment the read returns, so a `written` turn's receipt is confirmed at once. Returns the outcome.
 */
export async function receivedInProcess<T extends { receipt?: PendingReceipt | undefined }>(
  ctx: HostContext,
  outcome: T,
): Promise<T> {
  // A `seen` turn counts only what its driver saw in the client's stream.
  if (outcome.receipt?.rule === 'written') await confirmWritten(ctx, outcome.receipt);
  return outcome;
}

/**
 * Runs `work` in a transaction and, when it recorded something, wakes this process's live readers
 * (a commit on this connection does not move SQLite's data_version for this process's watcher).
 */
async function announced(ctx: HostContext, work: (trx: Db) => Promise<boolean>): Promise<boolean> {
  const recorded = await ctx.store.transaction(work);
  if (recorded) announceCommit(ctx);
  return recorded;
}
