import type { DeliveryLimits, RenderedDelivery } from '../../core/envelope.js';
import { SluiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/fragment.js';
import type { HostContext } from '../../host/context.js';
import {
  clearDispatch,
  countDispatch,
  DEFAULT_MAX_DISPATCH_ATTEMPTS,
  forgiveDispatch,
  noteUnsettledDispatch,
  returnExhaustedMessages,
} from '../../host/dispatch-attempts.js';
import type { Principal } from '../../host/principals.js';
import { dispatchState } from '../../host/queue.js';
import { withdrawOffers } from '../../host/receipts.js';
import {
  abandonTurn,
  beginTurn,
  endTurn,
  openTurnOfAgent,
  type SettledTurn,
  type TurnOutcome,
} from '../../host/turns.js';
import { coverDelivery, type DeliveredMessage } from './delivered.js';
import { renderDispatch } from './dispatch.js';
import { offerSteer, renderSteer } from './steer.js';

/** What a client needs to run one turn. */
export interface TurnRequest {
  turnId: string;
  delivery: RenderedDelivery;
  /** The delivered messages whose complete coverage was recorded, in FIFO order. */
  delivered: DeliveredMessage[];
}

/** An agent client (Claude Code, Codex) driven turn by turn. */
export interface DriverClient {
  /** `claude` or `codex`: used in logs and status lines. */
  readonly name: string;
  /** A key naming the client session (stored on each turn). */
  readonly sessionKey: string;
  /** Runs one turn and reports how it ended; rejects with {@link ClientGoneError} if the client died. */
  runTurn(request: TurnRequest): Promise<TurnOutcome>;
  /**
   * Adds more messages to the running turn `request.turnId` (called only while `runTurn` runs).
   * Resolves `true` when the client took them into that turn, `false` when it refused (no active
   * turn): they then wait for the next turn. Their coverage is only offered (keyed by the SHA-256
   * of `request.delivery.text`); the client confirms it through the turn's SeenResults when its
   * stream shows the model received exactly that text. A client without it never steers.
   */
  steer?(request: TurnRequest): Promise<boolean>;
  /** Settles when the client process has exited, with a one-line description. */
  readonly gone: Promise<string>;
  stop(): Promise<void>;
}

/** The client process ended: the open turn is abandoned and nothing is consumed. */
export class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError';
}

/** One settled (or abandoned) turn, as logged and shown. */
export interface TurnReport {
  turnId: string;
  delivered: string[];
  outcome: 'ok' | 'failed' | 'abandoned';
  failureKind?: string | undefined;
  reason?: string | undefined;
  handled: string[];
  returned: string[];
  durationMs: number;
}

export interface DriverLoopOptions {
  limits?: Partial<DeliveryLimits> | undefined;
  /** Called after each turn (log file + terminal line). */
  onTurn?: ((report: TurnReport) => void) | undefined;
  /** Called once with the number of stale open turns abandoned at start. */
  onStart?: ((info: { abandoned: string | null }) => void) | undefined;
  /** Aborting stops dispatch; a turn in flight is abandoned (nothing consumed). */
  signal?: AbortSignal | undefined;
  /**
   * Turns that may carry a message without settling (client error, client or driver died) before
   * it is returned with its reason (default {@link DEFAULT_MAX_DISPATCH_ATTEMPTS}).
   */
  maxAttempts?: number | undefined;
  /** Wait before re-dispatching after a turn that did not settle; doubles per attempt (default 1000). */
  retryDelayMs?: number | undefined;
  /** Called after each steer into a running turn: the ids it carried and whether the client took them. */
  onSteer?: ((steer: { turnId: string; ids: string[]; accepted: boolean }) => void) | undefined;
  /** Called with the messages returned because their turns kept ending without settling. */
  onReturned?: ((returned: { id: string; reason: string }[]) => void) | undefined;
  /**
   * Called as the loop begins each look at the queue (after a change woke it), with what that
   * look decides: lets a test know the loop saw a change and let it be, without sleeping.
   */
  onCheck?: ((check: LoopCheck) => void) | undefined;
}

/**
 * One look at the queue. `dispatch` (between turns) decides `turn` or `wait` (nothing deliverable
 * or nothing new: it waits for a change). `steer` (while a turn runs) decides `steered`, `nothing`
 * (nothing to steer within the turn's limits, or the queue is paused or blocked), or ends the
 * watcher: `refused` (the client took no steer) or `failed`.
 */
export interface LoopCheck {
  loop: 'dispatch' | 'steer';
  decided: Promise<'turn' | 'wait' | 'steered' | 'nothing' | 'refused' | 'failed'>;
}

/** Re-dispatch waits at most this long after an unsettled turn. */
const MAX_RETRY_DELAY_MS = 30_000;

/** A driven agent settles by turns; an explicit one would never consume what it was shown. */
export function requireTurnSettlement(agent: Principal): void {
  if (agent.settlement !== 'turn') {
    throw new SluiceError(
      'invalid_params',
      `${agent.name} settles explicitly; drivers settle by turns: run sluice agent settle ${agent.name} turn (or add agents with --settlement turn)`,
    );
  }
}

/** Wakes the loop on any commit, here or in another process; remembers a wake that came early. */
class Wakeup {
  private pending = false;
  private resolve: (() => void) | undefined;

  notify = (): void => {
    this.pending = true;
    this.resolve?.();
  };

  clear(): void {
    this.pending = false;
  }

  wait(): Promise<void> {
    if (this.pending) return Promise.resolve();
    return new Promise((resolve) => {
      this.resolve = () => {
        this.resolve = undefined;
        resolve();
      };
    });
  }
}

function abortPromise(signal: AbortSignal | undefined): Promise<'aborted'> {
  if (!signal) return new Promise(() => {});
  if (signal.aborted) return Promise.resolve('aborted');
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve('aborted'), { once: true }));
}

/**
 * Runs the agent's inbox through `client`, one turn at a time, until aborted or the client dies.
 * When the queue is deliverable (not paused, no blocking returned card) and has pending
 * messages, it opens a turn, renders a bounded delivery, records complete coverage of what it
 * carries, runs the turn and settles it by the client's outcome. A turn that neither carried nor
 * consumed anything waits for the queue to change before the next dispatch, so an undeliverable
 * head never spins.
 */
export async function runDriverLoop(
  ctx: HostContext,
  agent: Principal,
  client: DriverClient,
  options: DriverLoopOptions = {},
): Promise<void> {
  requireTurnSettlement(agent);
  const stale = await openTurnOfAgent(ctx, agent);
  if (stale) await abandonTurn(ctx, agent, stale.id);
  options.onStart?.({ abandoned: stale?.id ?? null });

  const wake = new Wakeup();
  const stopWatching = ctx.store.watchChanges(wake.notify);
  ctx.localCommitListeners.add(wake.notify);
  const aborted = abortPromise(options.signal);
  const gone = client.gone.then((why) => ({ gone: why }));
  try {
    let quietRevision: number | null = null;
    let unsettled = 0;
    for (;;) {
      if (options.signal?.aborted) return;
      wake.clear();
      const check = readyToDispatch(ctx, agent, options, quietRevision);
      options.onCheck?.({ loop: 'dispatch', decided: check.then((ready) => (ready ? 'turn' : 'wait')) });
      if (!(await check)) {
        const woke = await Promise.race([wake.wait().then(() => 'wake' as const), aborted, gone]);
        if (woke === 'aborted') return;
        if (typeof woke === 'object') throw new ClientGoneError(woke.gone);
        continue;
      }
      const report = await runOneTurn(ctx, agent, client, options, aborted, wake);
      if (report === 'aborted') return;
      if (report !== 'empty' && report.outcome === 'abandoned') {
        // The client refused the turn: back off, then retry (a retried message goes alone).
        unsettled++;
        if ((await retryPause(options.retryDelayMs, unsettled, aborted)) === 'aborted') return;
      } else {
        unsettled = 0;
      }
      // No progress (nothing carried whole, nothing consumed): wait for the queue to change. A
      // turn that carried messages made progress even if the model archived them itself.
      if (report === 'empty' || (report.delivered.length === 0 && report.handled.length === 0)) {
        quietRevision = (await dispatchState(ctx, agent)).summary.revision;
      } else {
        quietRevision = null;
      }
    }
  } finally {
    stopWatching();
    ctx.localCommitListeners.delete(wake.notify);
  }
}

/** Whether the queue has something new to dispatch (returning first what keeps failing to settle). */
async function readyToDispatch(
  ctx: HostContext,
  agent: Principal,
  options: DriverLoopOptions,
  quietRevision: number | null,
): Promise<boolean> {
  // A message whose turns keep ending unsettled is returned (and then blocks, as returned cards do).
  const exhausted = await returnExhaustedMessages(
    ctx,
    agent,
    options.maxAttempts ?? DEFAULT_MAX_DISPATCH_ATTEMPTS,
  );
  if (exhausted.length > 0) options.onReturned?.(exhausted);
  const { summary, deliverable } = await dispatchState(ctx, agent);
  return summary.total > 0 && summary.revision !== quietRevision && deliverable;
}

/** Waits `base × 2^(n-1)` ms (at most {@link MAX_RETRY_DELAY_MS}), or until aborted. */
async function retryPause(
  baseMs: number | undefined,
  n: number,
  aborted: Promise<'aborted'>,
): Promise<'aborted' | undefined> {
  const ms = Math.min(MAX_RETRY_DELAY_MS, (baseMs ?? 1000) * 2 ** Math.min(n - 1, 10));
  if (ms <= 0) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const slept = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([slept, aborted]);
  } finally {
    clearTimeout(timer);
  }
}

async function runOneTurn(
  ctx: HostContext,
  agent: Principal,
  client: DriverClient,
  options: DriverLoopOptions,
  aborted: Promise<'aborted'>,
  wake: Wakeup,
): Promise<TurnReport | 'empty' | 'aborted'> {
  const started = Date.now();
  // A driven turn counts a tool result only once the client's stream shows it received it (I9).
  const turn = await beginTurn(ctx, agent, { sessionKey: client.sessionKey, receipt: 'seen' });
  let request: TurnRequest;
  try {
    const delivery = await renderDispatch(ctx, agent, options.limits, options.maxAttempts);
    if (delivery.text === '') {
      await abandonTurn(ctx, agent, turn.id);
      return 'empty';
    }
    request = { turnId: turn.id, delivery, delivered: await coverDelivery(ctx, agent, delivery) };
  } catch (err) {
    await abandonTurn(ctx, agent, turn.id);
    throw err;
  }
  const delivered = request.delivered.map((m) => m.id);
  // Counted before the client sees the turn: a driver killed mid-turn cannot count afterwards.
  const attemptSeqs = await countDispatch(ctx, agent, delivered);
  let outcome: TurnOutcome | 'aborted';
  const running = client.runTurn(request);
  const steering = client.steer
    ? // Steering ends with the turn or with a stop: a stop must not wait for the model to finish.
      steerWhileRunning(
        ctx,
        agent,
        client,
        options,
        request,
        Promise.race([running, aborted]),
        wake,
        delivered,
        attemptSeqs,
      )
    : Promise.resolve();
  try {
    outcome = await Promise.race([running, aborted]);
  } catch (err) {
    await steering;
    const reason = err instanceof Error ? err.message : String(err);
    await noteUnsettledDispatch(ctx, agent, attemptSeqs, reason);
    await abandonTurn(ctx, agent, turn.id);
    const report: TurnReport = {
      turnId: turn.id,
      delivered,
      outcome: 'abandoned',
      reason,
      handled: [],
      returned: [],
      durationMs: Date.now() - started,
    };
    options.onTurn?.(report);
    // Without its client the driver cannot go on; any other refusal is counted and retried.
    if (err instanceof ClientGoneError) throw err;
    return report;
  }
  await steering;
  if (outcome === 'aborted') {
    await forgiveDispatch(ctx, agent, attemptSeqs);
    await abandonTurn(ctx, agent, turn.id);
    options.onTurn?.({
      turnId: turn.id,
      delivered,
      outcome: 'abandoned',
      reason: 'driver stopped',
      handled: [],
      returned: [],
      durationMs: Date.now() - started,
    });
    return 'aborted';
  }
  const settled: SettledTurn = await endTurn(ctx, agent, turn.id, outcome);
  await clearDispatch(ctx, agent, attemptSeqs);
  const report: TurnReport = {
    turnId: turn.id,
    delivered,
    outcome: outcome.ok ? 'ok' : 'failed',
    failureKind: outcome.ok ? undefined : outcome.kind,
    reason: outcome.ok ? undefined : outcome.reason,
    handled: settled.handled,
    returned: settled.returned,
    durationMs: Date.now() - started,
  };
  options.onTurn?.(report);
  return report;
}

/**
 * While `running` runs, steers each batch of messages that arrives behind the turn's own into it
 * (FIFO, within the turn's remaining limits, never past a pause or a returned card). Accepted
 * steers add their ids to `delivered` and their dispatch attempts to `attemptSeqs`. Resolves once
 * the turn ended and no steer is in flight, so the turn settles only after the last one.
 */
async function steerWhileRunning(
  ctx: HostContext,
  agent: Principal,
  client: DriverClient,
  options: DriverLoopOptions,
  request: TurnRequest,
  running: Promise<unknown>,
  wake: Wakeup,
  delivered: string[],
  attemptSeqs: number[],
): Promise<void> {
  const steer = client.steer?.bind(client);
  if (!steer) return;
  const ended = running.then(
    () => 'ended' as const,
    () => 'ended' as const,
  );
  const carried = [...request.delivery.included];
  let bytes = Buffer.byteLength(request.delivery.text);
  // One look: steers what arrived behind the turn's messages, if anything may go.
  const steerOnce = async (): Promise<'steered' | 'nothing' | 'refused' | 'failed'> => {
    try {
      const delivery = await renderSteer(ctx, agent, options.limits, { carried, bytes }, options.maxAttempts);
      if (!delivery) return 'nothing';
      const offered = await offerSteer(ctx, agent, request.turnId, delivery);
      if (offered.length === 0) return 'nothing';
      // A steer the client answers counts even when the turn ends meanwhile (the model may have
      // seen it: found on PostgreSQL, where the answer came a moment after the turn's end); only a
      // client that does not answer within STEER_ANSWER_AFTER_END_MS of the end is taken as a no.
      const answer = steer({ turnId: request.turnId, delivery, delivered: offered });
      const accepted = await Promise.race([answer, ended.then(() => answerWithin(answer))]);
      options.onSteer?.({ turnId: request.turnId, ids: offered.map((m) => m.id), accepted });
      if (!accepted) {
        // The client refused (or the turn ended first): the messages go to the next turn.
        await withdrawSteer(ctx, request.turnId, delivery.text);
        return 'refused';
      }
      carried.push(...delivery.included);
      bytes += Buffer.byteLength(delivery.text);
      const ids = offered.map((m) => m.id);
      delivered.push(...ids);
      attemptSeqs.push(...(await countDispatch(ctx, agent, ids)));
      return 'steered';
    } catch {
      // A steer that failed leaves its messages pending; the next turn delivers them.
      return 'failed';
    }
  };
  wake.clear();
  for (;;) {
    if ((await Promise.race([wake.wait().then(() => 'wake' as const), ended])) === 'ended') return;
    wake.clear();
    if (options.signal?.aborted) return;
    const decided = steerOnce();
    options.onCheck?.({ loop: 'steer', decided });
    const decision = await decided;
    if (decision === 'refused' || decision === 'failed') return;
  }
}

/** How long a steer's answer may come after its turn ended and still count. */
const STEER_ANSWER_AFTER_END_MS = 2_000;

/** The steer's answer, or false if it does not come within {@link STEER_ANSWER_AFTER_END_MS}. */
function answerWithin(answer: Promise<boolean>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), STEER_ANSWER_AFTER_END_MS);
    timer.unref();
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/** Forgets the coverage offered for a steer the client did not take. */
async function withdrawSteer(ctx: HostContext, turnId: string, text: string): Promise<void> {
  await withdrawOffers(ctx, turnId, sha256Hex(text));
}

/** The terminal line for a steer: which turn, how many messages, whether the client took them. */
export function steerStatusLine(
  agent: string,
  turnId: string,
  ids: readonly string[],
  accepted: boolean,
  at: Date = new Date(),
): string {
  const shown = `[${ids.slice(0, 3).join(' ')}${ids.length > 3 ? ' …' : ''}]`;
  const what = accepted ? 'steered' : 'steer refused, next turn';
  return `${at.toISOString().slice(11, 19)} ${agent} ${turnId} ${what}: ${ids.length} message(s) ${shown}`;
}

/** The terminal line for a turn: outcome, counts, the first ids, duration. */
export function turnStatusLine(agent: string, r: TurnReport, at: Date = new Date()): string {
  const time = at.toISOString().slice(11, 19);
  const ids =
    r.delivered.length === 0
      ? ''
      : ` [${r.delivered.slice(0, 3).join(' ')}${r.delivered.length > 3 ? ' …' : ''}]`;
  const outcome = r.outcome === 'failed' ? `failed (${r.failureKind})` : r.outcome;
  const seconds = (r.durationMs / 1000).toFixed(1);
  return `${time} ${agent} ${r.turnId} ${outcome}: ${r.delivered.length} delivered${ids}, ${r.handled.length} handled, ${r.returned.length} returned, ${seconds}s`;
}
