import { SluiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/fragment.js';
import { quoteInput } from '../../core/text.js';
import { deleteCoverageOffers } from '../../store/ops/coverage-offers.js';
import { appendEvent } from '../../store/ops/events.js';
import { findInboxEntries, type InboxRow } from '../../store/ops/inbox.js';
import { findMessagesBySeqs } from '../../store/ops/messages.js';
import {
  closeTurn,
  deleteCoverage,
  findTurn,
  insertTurn,
  listCoverage,
  listOpenTurns,
  type TurnRow,
} from '../../store/ops/turns.js';
import type { TurnReceipt } from '../../store/schema.js';
import type { Db } from '../../store/store.js';
import { announceCommit, type HostContext, newId, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { loadProjections } from '../messages/messages.js';
import { projectionText } from '../messages/projection.js';
import { repliesSettled } from '../queue/in-flight.js';
import { isPending, requireAgent, transitionEntries } from '../queue/inbox.js';

export type Turn = TurnRow;

/**
 * Opens a turn for the agent. An agent has at most one open turn: any turn still open is
 * abandoned first (its owner died or lost track of it) and consumes nothing. `receipt` says what
 * proves a read reached the client (default `written`; drivers open `seen` turns, DESIGN.md I9).
 */
export async function beginTurn(
  ctx: HostContext,
  agent: Principal,
  options: { sessionKey?: string | undefined; owner?: string | undefined; receipt?: TurnReceipt } = {},
): Promise<Turn> {
  requireAgent(agent);
  if (
    options.sessionKey !== undefined &&
    (typeof options.sessionKey !== 'string' || options.sessionKey.length > 512)
  ) {
    throw new SluiceError('invalid_params', 'session key must be a string of at most 512 characters');
  }
  const at = nowIso(ctx);
  const turn: Turn = {
    id: newId(ctx, 't'),
    agent_id: agent.id,
    state: 'open',
    session_key: options.sessionKey ?? null,
    owner: options.owner ?? ctx.ownerTag,
    started_at: at,
    ended_at: null,
    failure_kind: null,
    reason: null,
    receipt: options.receipt ?? 'written',
  };
  await ctx.store.transaction(async (trx) => {
    for (const open of await listOpenTurns(trx, agent.id)) {
      await closeTurn(trx, open.id, { state: 'abandoned', ended_at: at, reason: 'superseded by a new turn' });
      await deleteCoverage(trx, open.id);
      await deleteCoverageOffers(trx, open.id);
    }
    await insertTurn(trx, turn);
    await appendEvent(trx, { kind: 'turn.changed', agent_id: agent.id, created_at: at });
  });
  announceCommit(ctx);
  return turn;
}

/** The agent's open turn, if any: reads without one are peeks and consume nothing. */
export async function openTurnOf(db: Db, agentId: string): Promise<Turn | undefined> {
  const open = await listOpenTurns(db, agentId);
  return open[open.length - 1];
}

/** {@link openTurnOf} over the host's own handle: what a surface calls. */
export function openTurnOfAgent(ctx: HostContext, agent: Principal): Promise<Turn | undefined> {
  return openTurnOf(ctx.store.db, agent.id);
}

export type TurnOutcome = { ok: true } | { ok: false; kind: string; reason?: string | undefined };

export interface SettledTurn {
  turnId: string;
  state: 'succeeded' | 'failed' | 'abandoned';
  handled: string[];
  returned: string[];
}

const FAILURE_KIND = /^[a-z][a-z0-9_.-]{0,63}$/;

/**
 * Settles a turn. In `turn` mode a success marks every message covered completely in this turn
 * `handled` (if still pending and unchanged since it was read); a failure marks them `returned`
 * with the failure kind. In `explicit` mode nothing is consumed. Coverage is deleted either way.
 * Only confirmed coverage counts (DESIGN.md I9): a read whose result never reached the client, or
 * whose receipt is still unconfirmed, consumes nothing. Replies this process is still writing to
 * the agent's client are waited for (bounded) first.
 */
export async function endTurn(
  ctx: HostContext,
  agent: Principal,
  turnId: string,
  outcome: TurnOutcome,
): Promise<SettledTurn> {
  requireAgent(agent);
  if (!outcome.ok && (typeof outcome.kind !== 'string' || !FAILURE_KIND.test(outcome.kind))) {
    throw new SluiceError('invalid_params', 'failure kind must be a short lowercase word like model_error');
  }
  await repliesSettled(ctx, agent.id);
  const at = nowIso(ctx);
  const settled = await ctx.store.transaction(async (trx) => {
    const turn = typeof turnId === 'string' ? await findTurn(trx, turnId) : undefined;
    if (!turn || turn.agent_id !== agent.id)
      throw new SluiceError('not_found', `no turn ${quoteInput(turnId)}`);
    if (turn.state !== 'open') throw new SluiceError('conflict', `turn ${turn.id} is already ${turn.state}`);
    const result: SettledTurn = {
      turnId: turn.id,
      state: outcome.ok ? 'succeeded' : 'failed',
      handled: [],
      returned: [],
    };
    if (agent.settlement === 'turn') {
      const covered = (await listCoverage(trx, turn.id)).filter((c) => c.complete === 1);
      const rows = await findMessagesBySeqs(
        trx,
        covered.map((c) => c.message_seq),
      );
      const projections = await loadProjections(trx, rows);
      const currentSha = new Map(
        rows.map((r, i) => [Number(r.seq), sha256Hex(projectionText(projections[i]!))]),
      );
      const entries = new Map(
        (
          await findInboxEntries(
            trx,
            agent.id,
            covered.map((c) => c.message_seq),
          )
        ).map((e) => [Number(e.message_seq), e]),
      );
      const settling: InboxRow[] = [];
      for (const c of covered) {
        const entry = entries.get(Number(c.message_seq));
        if (!entry || !isPending(entry.state)) continue;
        // An edit after the read means the model never saw this version: it stays pending.
        if (currentSha.get(c.message_seq) !== c.sha256) continue;
        settling.push(entry);
      }
      if (outcome.ok) {
        await transitionEntries(trx, settling, 'handled', at);
        result.handled = settling.map((e) => e.message_id);
      } else {
        await transitionEntries(trx, settling, 'returned', at, {
          failure_kind: outcome.kind,
          returned_reason: outcome.reason ?? null,
        });
        result.returned = settling.map((e) => e.message_id);
      }
    }
    await closeTurn(trx, turn.id, {
      state: result.state,
      ended_at: at,
      failure_kind: outcome.ok ? null : outcome.kind,
      reason: outcome.ok ? null : (outcome.reason ?? null),
    });
    await deleteCoverage(trx, turn.id);
    await deleteCoverageOffers(trx, turn.id);
    await appendEvent(trx, { kind: 'turn.changed', agent_id: agent.id, created_at: at });
    return result;
  });
  announceCommit(ctx);
  return settled;
}

/**
 * The settlement of a turn that an earlier {@link endTurn} already committed with `outcome`, or
 * undefined if it did not. For a settle retried after the connection dropped during its commit
 * (the outcome was unknown, docs/postgres.md): `handled` / `returned` are the carried messages
 * (`messageSeqs`) now in that state.
 */
export async function settledEarlier(
  ctx: HostContext,
  agent: Principal,
  turnId: string,
  outcome: TurnOutcome,
  messageSeqs: readonly number[],
): Promise<SettledTurn | undefined> {
  const state = outcome.ok ? 'succeeded' : 'failed';
  const turn = await findTurn(ctx.store.db, turnId);
  if (!turn || turn.agent_id !== agent.id || turn.state !== state) return undefined;
  const entries = await findInboxEntries(ctx.store.db, agent.id, messageSeqs);
  const settledAs = outcome.ok ? 'handled' : 'returned';
  const ids = entries.filter((e) => e.state === settledAs).map((e) => e.message_id);
  return { turnId, state, handled: outcome.ok ? ids : [], returned: outcome.ok ? [] : ids };
}

/** Marks a turn abandoned (its owner is gone): nothing is consumed. */
export async function abandonTurn(ctx: HostContext, agent: Principal, turnId: string): Promise<void> {
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    const turn = await findTurn(trx, turnId);
    if (!turn || turn.agent_id !== agent.id)
      throw new SluiceError('not_found', `no turn ${quoteInput(turnId)}`);
    if (turn.state !== 'open') return;
    await closeTurn(trx, turn.id, { state: 'abandoned', ended_at: at });
    await deleteCoverage(trx, turn.id);
    await deleteCoverageOffers(trx, turn.id);
    await appendEvent(trx, { kind: 'turn.changed', agent_id: agent.id, created_at: at });
  });
  announceCommit(ctx);
}
