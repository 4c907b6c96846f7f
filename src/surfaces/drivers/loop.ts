import type { DeliveryLimits, RenderedDelivery } from '../../core/envelope.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import {
  type ClientTurn,
  type DeliveredMessage,
  TurnDispatcher,
  type TurnOutcome,
  type TurnReport,
  type TurnSession,
} from '../../host/turns/index.js';
import {
  faultLine,
  isDatabaseAway,
  type OutageEvent,
  type OutageWait,
  pauseOrAbort,
  throughOutage,
} from './outage.js';

/** What a client needs to run one turn, or to take one steer into it. */
export interface TurnRequest {
  /** The Sluice turn: where the client reports what it showed its model and whom it waits on. */
  turn: ClientTurn;
  delivery: RenderedDelivery;
  /** The messages the delivery carries whole, in FIFO order (with attachments to materialise). */
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
   * Adds more messages to the running turn `request.turn` (called only while `runTurn` runs).
   * Resolves `true` when the client took them into that turn, `false` when it refused (no active
   * turn): they then wait for the next turn. They count only once the client reports, through
   * `request.turn.saw`, that its model received exactly `request.delivery.text`. A client without
   * it never steers.
   */
  steer?(request: TurnRequest): Promise<boolean>;
  /** Settles when the client process has exited, with a one-line description. */
  readonly gone: Promise<string>;
  stop(): Promise<void>;
  /**
   * Called when the driver stops during a turn, before the host abandons it: afterwards the client
   * must no longer be able to act for that turn (a reply or an archive it made then would consume
   * what the abandonment gives back). A client without it must stop acting by itself.
   */
  endTurn?(): Promise<void>;
}

/** The client process ended: the open turn is abandoned and nothing is consumed. */
export class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError';
}

export interface DriverLoopOptions {
  limits?: Partial<DeliveryLimits> | undefined;
  /** Called after each turn (log file + terminal line). */
  onTurn?: ((report: TurnReport) => void) | undefined;
  /** Called once with the number of stale open turns abandoned at start. */
  onStart?: ((info: { abandoned: string | null }) => void) | undefined;
  /** Aborting stops dispatch; a turn in flight is abandoned (nothing consumed). */
  signal?: AbortSignal | undefined;
  /** Turns that may carry a message without settling before it is returned with its reason (default 3). */
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
  /**
   * Called while the database is unreachable (each failed attempt, with the wait before the next)
   * and once it answers again: the loop keeps its client session and retries (docs/drivers.md).
   */
  onOutage?: ((event: OutageEvent) => void) | undefined;
  /** Test seam: the wait before retry `attempt + 1` during an outage (default 0.25 s doubling to 10 s, jittered). */
  outageBackoffMs?: ((attempt: number) => number) | undefined;
  /**
   * Asked before each turn begins: whether this driver still holds the agent (driver-lock.ts
   * HeldDriver.confirm). After an outage longer than the hold's lease another driver may have
   * taken the agent over; on `false` the loop ends without beginning the turn.
   */
  confirmHold?: (() => Promise<boolean>) | undefined;
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

/** What one run of the loop shares between its turns. */
interface LoopRun {
  client: DriverClient;
  options: DriverLoopOptions;
  aborted: Promise<'aborted'>;
  wake: Wakeup;
  /** How the loop waits out the database being unreachable (outage.ts). */
  outage: OutageWait;
}

/**
 * Runs the agent's inbox through `client`, one turn at a time, until aborted or the client dies.
 * The host decides when a turn begins and what it carries (host/turns: TurnDispatcher,
 * TurnSession); this loop waits for changes, hands the turn's slices to the client, and reports
 * how the client ended the turn, which the session settles.
 */
export async function runDriverLoop(
  ctx: HostContext,
  agent: Principal,
  client: DriverClient,
  options: DriverLoopOptions = {},
): Promise<void> {
  const aborted = abortPromise(options.signal);
  const outage: OutageWait = { aborted, onOutage: options.onOutage, backoffMs: options.outageBackoffMs };
  // Every read and write of the loop waits out the database's weather: a restart or failover must
  // not end the driver and its client session (the field bug: it exited when PostgreSQL restarted).
  const opened = await throughOutage(
    () =>
      TurnDispatcher.open(ctx, agent, {
        sessionKey: client.sessionKey,
        limits: options.limits,
        maxAttempts: options.maxAttempts,
        retryDelayMs: options.retryDelayMs,
      }),
    outage,
  );
  if (opened === 'aborted') return;
  const { dispatcher, abandoned } = opened;
  options.onStart?.({ abandoned });

  const wake = new Wakeup();
  const stopWatching = ctx.store.watchChanges(wake.notify);
  ctx.localCommitListeners.add(wake.notify);
  const gone = client.gone.then((why) => ({ gone: why }));
  const run: LoopRun = { client, options, aborted, wake, outage };
  try {
    for (;;) {
      if (options.signal?.aborted) return;
      wake.clear();
      const check = throughOutage(() => dispatcher.ready(), outage).then((answer) => {
        if (answer === 'aborted') return answer;
        if (answer.returned.length > 0) options.onReturned?.(answer.returned);
        return answer.ready;
      });
      options.onCheck?.({
        loop: 'dispatch',
        decided: check.then((ready) => (ready === true ? 'turn' : 'wait')),
      });
      const ready = await check;
      if (ready === 'aborted') return;
      if (!ready) {
        const woke = await Promise.race([wake.wait().then(() => 'wake' as const), aborted, gone]);
        if (woke === 'aborted') return;
        if (typeof woke === 'object') throw new ClientGoneError(woke.gone);
        continue;
      }
      // Not one turn by a driver that lost the agent while the database was away (the lease lapsed
      // and another driver took over): it would take turns alongside the new driver.
      const confirmHold = options.confirmHold;
      if (confirmHold) {
        const held = await throughOutage(confirmHold, outage);
        if (held === 'aborted' || !held) return;
      }
      // A begin that failed part way is begun again: beginTurn supersedes the turn it left open.
      const session = await throughOutage(() => dispatcher.begin(), outage);
      if (session === 'aborted') return;
      const report = session ? await runOneTurn(run, session) : undefined;
      if (report === 'aborted') return;
      if ((await pauseOrAbort(dispatcher.retryDelayAfter(report), aborted)) === 'aborted') return;
      if ((await throughOutage(() => dispatcher.ended(report), outage)) === 'aborted') return;
    }
  } finally {
    stopWatching();
    ctx.localCommitListeners.delete(wake.notify);
  }
}

/** Runs the session's turn on the client, steering meanwhile, and has the session settle or abandon it. */
async function runOneTurn(run: LoopRun, session: TurnSession): Promise<TurnReport | 'aborted'> {
  const { client, options, aborted, outage } = run;
  const running = client.runTurn({ turn: session, ...session.first });
  const steering = steerWhileRunning(run, session, running);
  let outcome: TurnOutcome | 'aborted';
  try {
    outcome = await Promise.race([running, aborted]);
  } catch (err) {
    await steering;
    // The database gone from under the client's turn (its attachments could not be read) is not
    // the messages' fault: the attempt is taken back, as for a stop, so an outage returns nothing.
    // Any other fault (a disk I/O error, a full disk) may recur with every delivery of these
    // messages: it counts, so they reach repeated_failure instead of being redelivered forever.
    const cause = isDatabaseAway(err) ? 'stopped' : 'unsettled';
    const report = await throughOutage(() => session.abandon(cause, faultLine(err)), outage);
    // Stopped while the database was away: the next start abandons the turn left open.
    if (report !== 'aborted') options.onTurn?.(report);
    // Without its client the driver cannot go on; any other refusal is counted and retried.
    if (err instanceof ClientGoneError) throw err;
    return report;
  }
  await steering;
  if (outcome === 'aborted') {
    // The client goes first: abandoned while it still ran, the turn could still be acted on.
    await client.endTurn?.();
    // One try (the stop is not held up by an outage): a turn left open is abandoned at the next start.
    const report = await throughOutage(() => session.abandon('stopped', 'driver stopped'), outage);
    if (report !== 'aborted') options.onTurn?.(report);
    return 'aborted';
  }
  // The client ended the turn: it settles once the database answers, however long that takes, so
  // what the model did is consumed once and not delivered again.
  const report = await throughOutage(() => session.settle(outcome), outage);
  if (report === 'aborted') return 'aborted';
  options.onTurn?.(report);
  return report;
}

/**
 * While `running` runs, asks the session for each slice that arrives behind the turn's messages
 * and hands it to the client. Resolves once the turn ended and no steer is in flight, so the turn
 * settles only after the last one.
 */
async function steerWhileRunning(
  run: LoopRun,
  session: TurnSession,
  running: Promise<unknown>,
): Promise<void> {
  const { client, options, wake } = run;
  const steer = client.steer?.bind(client);
  if (!steer) return;
  // Steering ends with the turn or with a stop: a stop must not wait for the model to finish.
  const ended = Promise.race([running, run.aborted]).then(
    () => 'ended' as const,
    () => 'ended' as const,
  );
  // One look: steers what arrived behind the turn's messages, if anything may go.
  const steerOnce = async (): Promise<'steered' | 'nothing' | 'refused' | 'failed'> => {
    try {
      const slice = await session.nextSteer();
      if (!slice) return 'nothing';
      // A steer the client answers counts even when the turn ends meanwhile (the model may have
      // seen it: found on PostgreSQL, where the answer came a moment after the turn's end); only a
      // client that does not answer within STEER_ANSWER_AFTER_END_MS of the end is taken as a no.
      const answer = steer({ turn: session, ...slice });
      const accepted = await Promise.race([answer, ended.then(() => answerWithin(answer))]);
      options.onSteer?.({ turnId: session.id, ids: slice.delivered.map((m) => m.id), accepted });
      // Refused (or the turn ended first): the messages go to the next turn.
      await session.steerAnswered(slice, accepted);
      return accepted ? 'steered' : 'refused';
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
