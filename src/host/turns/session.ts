import type { RenderedDelivery } from '../../core/envelope.js';
import { SluiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/fragment.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { clearDispatch, countDispatch, forgiveDispatch, noteUnsettledDispatch } from './attempts.js';
import { carriedWhole, type DeliveredMessage } from './carried.js';
import { recordDeliveredCoverage } from './coverage.js';
import {
  abandonTurn,
  beginTurn,
  endTurn,
  type SettledTurn,
  settledEarlier,
  type TurnOutcome,
} from './lifecycle.js';
import { offerToTurn, withdrawOffers } from './receipts.js';
import { type ClientSaw, TurnSightings } from './sightings.js';
import { renderDispatch, renderSteer, type SliceLimits } from './slices.js';

/** What a driven turn is given: the client session's key, its limits and attempt bound. */
export interface DrivenTurnOptions extends SliceLimits {
  /** A key naming the client session (stored on the turn). */
  sessionKey: string;
}

/** One settled (or abandoned) turn, as logged and shown. */
export interface TurnReport {
  turnId: string;
  /** Every message the turn carried whole: its delivery, then the steers the client took. */
  delivered: string[];
  outcome: 'ok' | 'failed' | 'abandoned';
  failureKind?: string | undefined;
  reason?: string | undefined;
  handled: string[];
  returned: string[];
  durationMs: number;
}

/** A slice handed to the client: the envelope and the messages it carries whole, with their attachments. */
export interface TurnSlice {
  delivery: RenderedDelivery;
  delivered: DeliveredMessage[];
}

/**
 * The turn as its client sees it: where the driver reports, as data, what the client showed its
 * model, and whom the turn waits on. It never learns what anything counts for.
 */
export interface ClientTurn {
  readonly id: string;
  /** The client showed its model `what`, verbatim (read from the client's own stream). */
  saw(what: ClientSaw): void;
  /** A person was asked (approval `approvalId`) for something the turn cannot go on without. */
  waitOnPerson(approvalId: string): void;
  /** The person's answer reached the client. */
  personAnswered(approvalId: string): void;
}

/** `running`; `waiting` while a person is asked and has not answered; `ended` once settled or abandoned. */
export type TurnPhase = 'running' | 'waiting' | 'ended';

/**
 * One driven turn, owned by the host from begin to end: it opens a `seen` turn and dispatches the
 * first slice (recording complete coverage of what it carries whole, counting one dispatch attempt
 * per message before the client sees it), steers later slices into it (offered, and counted only
 * once the client shows it took them), records what the client saw, and settles or abandons it.
 * A driver only translates its client's protocol into these calls.
 */
export class TurnSession implements ClientTurn {
  readonly id: string;
  /** The first slice, for the client's turn. */
  readonly first: TurnSlice;
  readonly #ctx: HostContext;
  readonly #agent: Principal;
  readonly #limits: SliceLimits;
  readonly #started: number;
  readonly #sightings: TurnSightings;
  /** Ids the turn carries in FIFO order, with the UTF-8 bytes of their envelopes: the steer budget. */
  readonly #carried: string[];
  #bytes: number;
  /** Ids carried whole (covered or offered and taken), and their dispatch attempts. */
  readonly #delivered: string[];
  readonly #attemptSeqs: number[];
  readonly #waitingOn = new Set<string>();
  #ended = false;
  /** The committed settlement, once {@link settle} got that far (a retried settle resumes after it). */
  #settled: SettledTurn | undefined;
  /** Whether a settle was tried: a retry may find the turn settled by a commit whose answer was lost. */
  #settleTried = false;
  /** Whether the dispatch attempts were noted (or forgiven) for an abandon: a retry must not repeat it. */
  #attemptsNoted = false;

  private constructor(
    ctx: HostContext,
    agent: Principal,
    turnId: string,
    first: TurnSlice,
    attemptSeqs: number[],
    limits: SliceLimits,
    started: number,
  ) {
    this.#ctx = ctx;
    this.#agent = agent;
    this.id = turnId;
    this.first = first;
    this.#limits = limits;
    this.#started = started;
    this.#sightings = new TurnSightings(ctx, agent, turnId);
    this.#carried = [...first.delivery.included];
    this.#bytes = Buffer.byteLength(first.delivery.text);
    this.#delivered = first.delivered.map((m) => m.id);
    this.#attemptSeqs = attemptSeqs;
  }

  /**
   * Opens a turn and dispatches its first slice, or returns undefined (the turn abandoned, nothing
   * counted) when there is nothing to deliver. The slice's coverage is recorded at once: the driver
   * hands this envelope to the client itself, and the turn can only succeed once the client took it.
   */
  static async begin(
    ctx: HostContext,
    agent: Principal,
    options: DrivenTurnOptions,
  ): Promise<TurnSession | undefined> {
    const started = Date.now();
    // A driven turn counts a tool result only once the client's stream shows it received it (I9).
    const turn = await beginTurn(ctx, agent, { sessionKey: options.sessionKey, receipt: 'seen' });
    try {
      const slice = await renderDispatch(ctx, agent, options);
      if (slice.delivery.text === '') {
        await abandonTurn(ctx, agent, turn.id);
        return undefined;
      }
      const { reads, delivered } = await carriedWhole(ctx, agent, slice);
      await recordDeliveredCoverage(ctx, agent, reads);
      // Counted before the client sees the turn: a driver killed mid-turn cannot count afterwards.
      const attemptSeqs = await countDispatch(
        ctx,
        agent,
        delivered.map((m) => m.id),
      );
      const limits = { limits: options.limits, maxAttempts: options.maxAttempts };
      const first = { delivery: slice.delivery, delivered };
      return new TurnSession(ctx, agent, turn.id, first, attemptSeqs, limits, started);
    } catch (err) {
      await abandonTurn(ctx, agent, turn.id);
      throw err;
    }
  }

  get phase(): TurnPhase {
    if (this.#ended) return 'ended';
    return this.#waitingOn.size > 0 ? 'waiting' : 'running';
  }

  /** The approvals the turn waits on now. */
  get waitingOn(): string[] {
    return [...this.#waitingOn];
  }

  /** Every message the turn carried whole so far. */
  get delivered(): readonly string[] {
    return this.#delivered;
  }

  saw(what: ClientSaw): void {
    this.#sightings.saw(what);
  }

  waitOnPerson(approvalId: string): void {
    if (!this.#ended) this.#waitingOn.add(approvalId);
  }

  personAnswered(approvalId: string): void {
    this.#waitingOn.delete(approvalId);
  }

  /**
   * The next slice to steer into the running turn (within what is left of its limits, FIFO behind
   * what it carries), its coverage offered keyed by the SHA-256 of its text — or undefined. Pass it
   * to {@link steerAnswered} with the client's answer before asking for another.
   */
  async nextSteer(): Promise<TurnSlice | undefined> {
    if (this.#ended) return undefined;
    const budget = { carried: this.#carried, bytes: this.#bytes };
    const slice = await renderSteer(this.#ctx, this.#agent, this.#limits, budget);
    if (!slice) return undefined;
    const { reads, delivered } = await carriedWhole(this.#ctx, this.#agent, slice);
    if (reads.length === 0) return undefined;
    const sha = sha256Hex(slice.delivery.text);
    if (!(await offerToTurn(this.#ctx, this.#agent, this.id, sha, reads))) return undefined;
    return { delivery: slice.delivery, delivered };
  }

  /**
   * The client took `steer` into the turn (its coverage still waits for the client to show the
   * model received it) or refused it (the offer is withdrawn: the messages go to the next turn).
   */
  async steerAnswered(steer: TurnSlice, accepted: boolean): Promise<void> {
    if (!accepted) {
      await withdrawOffers(this.#ctx, this.id, sha256Hex(steer.delivery.text));
      return;
    }
    this.#carried.push(...steer.delivery.included);
    this.#bytes += Buffer.byteLength(steer.delivery.text);
    const ids = steer.delivered.map((m) => m.id);
    this.#delivered.push(...ids);
    this.#attemptSeqs.push(...(await countDispatch(this.#ctx, this.#agent, ids)));
  }

  /**
   * Settles the turn by the client's outcome, once every sighting reported so far is stored: on
   * success what it covered completely is handled, on failure returned. The messages' unsettled
   * dispatch attempts are forgotten either way (the client coped with them). Safe to call again with
   * the same outcome after it failed (the database went away): it resumes where it stopped, and a
   * settlement committed by an attempt whose answer was lost is found, not repeated.
   */
  async settle(outcome: TurnOutcome): Promise<TurnReport> {
    await this.#sightings.settled();
    this.#end();
    this.#settled ??= await this.#endOnce(outcome);
    const settled = this.#settled;
    await clearDispatch(this.#ctx, this.#agent, this.#attemptSeqs);
    return {
      ...this.#reportBase(),
      outcome: outcome.ok ? 'ok' : 'failed',
      failureKind: outcome.ok ? undefined : outcome.kind,
      reason: outcome.ok ? undefined : outcome.reason,
      handled: settled.handled,
      returned: settled.returned,
    };
  }

  /**
   * Abandons the turn: nothing is consumed. A turn that ended `unsettled` (the client refused it or
   * died) keeps its dispatch attempts with `reason`; one `stopped` on purpose takes them back. Safe
   * to call again after it failed (the database went away): the attempts are taken back (or noted)
   * once, and abandoning an abandoned turn does nothing.
   */
  async abandon(cause: 'unsettled' | 'stopped', reason: string): Promise<TurnReport> {
    await this.#sightings.settled();
    this.#end();
    if (!this.#attemptsNoted) {
      if (cause === 'stopped') await forgiveDispatch(this.#ctx, this.#agent, this.#attemptSeqs);
      else await noteUnsettledDispatch(this.#ctx, this.#agent, this.#attemptSeqs, reason);
      this.#attemptsNoted = true;
    }
    await abandonTurn(this.#ctx, this.#agent, this.id);
    return { ...this.#reportBase(), outcome: 'abandoned', reason, handled: [], returned: [] };
  }

  /** Ends the turn by `outcome`; on a retry, a turn already settled so is the earlier settlement. */
  async #endOnce(outcome: TurnOutcome): Promise<SettledTurn> {
    const retry = this.#settleTried;
    this.#settleTried = true;
    try {
      return await endTurn(this.#ctx, this.#agent, this.id, outcome);
    } catch (err) {
      if (!retry || !(err instanceof SluiceError) || err.code !== 'conflict') throw err;
      const earlier = await settledEarlier(this.#ctx, this.#agent, this.id, outcome, this.#attemptSeqs);
      if (earlier === undefined) throw err;
      return earlier;
    }
  }

  #end(): void {
    this.#ended = true;
    this.#waitingOn.clear();
  }

  #reportBase(): Pick<TurnReport, 'turnId' | 'delivered' | 'durationMs'> {
    return { turnId: this.id, delivered: [...this.#delivered], durationMs: Date.now() - this.#started };
  }
}
