import { SluiceError } from '../../core/errors.js';
import type { HostContext } from '../context.js';
import type { Principal } from '../principals.js';
import { dispatchState } from '../queue.js';
import { DEFAULT_MAX_DISPATCH_ATTEMPTS, returnExhaustedMessages } from './attempts.js';
import { abandonTurn, openTurnOf } from './lifecycle.js';
import { type DrivenTurnOptions, type TurnReport, TurnSession } from './session.js';

/** Re-dispatch waits at most this long after an unsettled turn. */
const MAX_RETRY_DELAY_MS = 30_000;

export interface DispatcherOptions extends DrivenTurnOptions {
  /** Wait before re-dispatching after a turn that did not settle; doubles per attempt (default 1000). */
  retryDelayMs?: number | undefined;
}

/** A driven agent settles by turns; an explicit one would never consume what it was shown. */
export function requireTurnSettlement(agent: Principal): void {
  if (agent.settlement !== 'turn') {
    throw new SluiceError(
      'invalid_params',
      `${agent.name} settles explicitly; drivers settle by turns: run sluice agent settle ${agent.name} turn (or add agents with --settlement turn)`,
    );
  }
}

/**
 * Decides, between turns, when a driven agent's next turn begins. The queue must be deliverable
 * (not paused, no blocking returned card) with something pending; a turn that neither carried nor
 * consumed anything makes it wait for the queue to change, so an undeliverable head never spins;
 * a turn the client refused backs off before the retry; a message whose turns keep ending
 * unsettled is returned before it is dispatched again.
 */
export class TurnDispatcher {
  /** The queue revision after a turn that made no progress: nothing new until it moves. */
  #quietRevision: number | null = null;
  /** Consecutive turns the client refused. */
  #unsettled = 0;

  private constructor(
    private readonly ctx: HostContext,
    private readonly agent: Principal,
    private readonly options: DispatcherOptions,
  ) {}

  /**
   * Opens the dispatcher of a driven agent (which must settle by turns). A turn left open by a
   * driver that died is abandoned (it consumes nothing); `abandoned` names it.
   */
  static async open(
    ctx: HostContext,
    agent: Principal,
    options: DispatcherOptions,
  ): Promise<{ dispatcher: TurnDispatcher; abandoned: string | null }> {
    requireTurnSettlement(agent);
    const stale = await openTurnOf(ctx.store.db, agent.id);
    if (stale) await abandonTurn(ctx, agent, stale.id);
    return { dispatcher: new TurnDispatcher(ctx, agent, options), abandoned: stale?.id ?? null };
  }

  /**
   * Whether the queue has something new to dispatch, with the messages returned first because
   * their turns kept ending without settling (a returned card then blocks, as any does).
   */
  async ready(): Promise<{ ready: boolean; returned: { id: string; reason: string }[] }> {
    const returned = await returnExhaustedMessages(
      this.ctx,
      this.agent,
      this.options.maxAttempts ?? DEFAULT_MAX_DISPATCH_ATTEMPTS,
    );
    const { summary, deliverable } = await dispatchState(this.ctx, this.agent);
    const ready = summary.total > 0 && summary.revision !== this.#quietRevision && deliverable;
    return { ready, returned };
  }

  /** Begins the next turn; undefined when there was nothing to deliver after all. */
  begin(): Promise<TurnSession | undefined> {
    return TurnSession.begin(this.ctx, this.agent, this.options);
  }

  /**
   * How long to wait before the next dispatch after `report` (undefined: the turn had nothing to
   * deliver): `retryDelayMs × 2^(n-1)` after the n-th refused turn in a row (at most 30 s), else 0.
   */
  retryDelayAfter(report: TurnReport | undefined): number {
    if (report?.outcome !== 'abandoned') {
      this.#unsettled = 0;
      return 0;
    }
    this.#unsettled++;
    const base = this.options.retryDelayMs ?? 1000;
    return Math.min(MAX_RETRY_DELAY_MS, base * 2 ** Math.min(this.#unsettled - 1, 10));
  }

  /**
   * Notes how a turn ended. One without progress (nothing carried whole, nothing consumed) makes
   * the next dispatch wait for the queue to change; one that carried messages made progress even
   * if the model archived them itself.
   */
  async ended(report: TurnReport | undefined): Promise<void> {
    const progressed = report !== undefined && (report.delivered.length > 0 || report.handled.length > 0);
    this.#quietRevision = progressed ? null : (await dispatchState(this.ctx, this.agent)).summary.revision;
  }
}
