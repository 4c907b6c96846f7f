import { randomBytes } from 'node:crypto';
import {
  claimRuns,
  type HeldRun,
  releaseRuns,
  reportRun,
  reportRunModelError,
} from '../../host/agents/index.js';
import type { HostContext } from '../../host/identity/index.js';
import { isReadyLine, isTurnOkLine, modelErrorOfLine } from '../drivers/status-lines.js';
import { RunLog, runLogPath } from './run-log.js';

// The `sluice serve` side of host-run agents (docs/agents.md): it leases the run specs of its
// machine and home, starts each driver (`sluice drive claude|codex`), restarts one that exits with
// a jittered, growing delay, stops it when its managers ask or the host shuts down, and reports
// each state to the store, where `sluice agent ls` and the page read it.

/** A started driver process, as the supervisor sees it. */
export interface RunChild {
  readonly pid: number | undefined;
  /** Resolves once the process exited (never rejects). */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** Asks it to stop (SIGTERM: the driver abandons a turn in flight, consuming nothing). */
  terminate(): void;
  /** Ends it and everything it started (SIGKILL to its process group). */
  kill(): void;
}

/** What the supervisor learns from a child's output. */
export interface ChildOutput {
  /** Raw output for the run log. */
  log(text: string): void;
  /** One complete line of stderr (the last one before a crash is its error line). */
  errorLine(line: string): void;
  /** One complete line of stdout. */
  outLine(line: string): void;
}

/** Starts the driver of a run (src/surfaces/agents/launch.ts in a real host; a fake in tests). */
export type LaunchRun = (run: HeldRun, output: ChildOutput) => RunChild;

export interface BackoffSettings {
  /** Delay before the first restart, ms. */
  baseMs: number;
  /** Longest delay, ms. */
  maxMs: number;
  /** A child that ran this long before exiting starts the delays over, ms. */
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffSettings = { baseMs: 1000, maxMs: 60_000, resetAfterMs: 60_000 };

/**
 * The delay before restart number `failures` (1, 2, …): base × 2^(failures−1), at most max, then
 * jittered to between half and all of it (`random` in [0, 1)), so agents that crashed together do
 * not restart together.
 */
export function restartDelay(failures: number, random: number, backoff: BackoffSettings): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 30);
  const full = Math.min(backoff.maxMs, backoff.baseMs * 2 ** exponent);
  return Math.round(full / 2 + (full / 2) * random);
}

export interface SupervisorOptions {
  launch: LaunchRun;
  /** This supervisor's lease name (random by default). */
  holder?: string;
  /** How long a lease lasts, ms (another host of the same machine and home may take it after). */
  leaseMs?: number;
  /** How often the lease is renewed and the specs re-read without a change, ms. */
  renewMs?: number;
  backoff?: BackoffSettings;
  /** How long a child may take to stop after SIGTERM before it is killed, ms. */
  stopGraceMs?: number;
  /** Timers (tests run them by hand). */
  setTimer?: (ms: number, fn: () => void) => () => void;
  random?: () => number;
  /** The run log of an agent (default `<home>/logs/agent-<name>.log`, bounded). */
  openLog?: (agent: string) => Pick<RunLog, 'write' | 'note' | 'close'>;
  /** A line for the host's own output (errors reaching the store), e.g. the serve log. */
  warn?: (line: string) => void;
}

export interface Supervisor {
  readonly holder: string;
  /** Re-reads the specs now (also done on every store change and every `renewMs`). */
  poke(): void;
  /** Resolves once every change seen so far was acted on (tests). */
  settled(): Promise<void>;
  /** Stops every child (SIGTERM, then SIGKILL after the grace), releases the leases. */
  shutdown(): Promise<void>;
}

interface Slot {
  run: HeldRun;
  log: Pick<RunLog, 'write' | 'note' | 'close'>;
  child?: RunChild | undefined;
  childSeq?: number;
  startedAt?: number;
  /** Set when the supervisor asked the child to stop (an exit then is no crash). */
  stopping?: boolean;
  /** Cancels a pending restart. */
  cancelTimer?: (() => void) | undefined;
  failures: number;
  restarts: number;
  lastErrorLine?: string | undefined;
  /** The model error the running child reported last (undefined: none, or a turn succeeded since). */
  modelError?: string | undefined;
  /** Reports go out in order, one at a time. */
  reports: Promise<void>;
}

const defaultSetTimer = (ms: number, fn: () => void) => {
  const t = setTimeout(fn, ms);
  t.unref();
  return () => clearTimeout(t);
};

/** Starts supervising the run specs of `ctx`'s machine and home. */
export function startSupervisor(ctx: HostContext, options: SupervisorOptions): Supervisor {
  const holder = options.holder ?? `${ctx.ownerTag}:${randomBytes(4).toString('hex')}`;
  const leaseMs = options.leaseMs ?? 30_000;
  const renewMs = options.renewMs ?? 10_000;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const stopGraceMs = options.stopGraceMs ?? 10_000;
  const setTimer = options.setTimer ?? defaultSetTimer;
  const random = options.random ?? Math.random;
  const openLog = options.openLog ?? ((agent: string) => new RunLog(runLogPath(ctx.home, agent)));
  const warn = options.warn ?? (() => {});
  const slots = new Map<string, Slot>();
  let closed = false;

  const report = (slot: Slot, fields: Parameters<typeof reportRun>[3]) => {
    slot.reports = slot.reports
      .then(() => reportRun(ctx, holder, slot.run.agentId, fields))
      .catch((err) => warn(`could not record ${slot.run.agent}'s state: ${(err as Error).message}`));
  };

  /** The child's model error changed: recorded apart from its state (the driver runs on). */
  const modelError = (slot: Slot, error: string | undefined) => {
    if (slot.modelError === error) return;
    slot.modelError = error;
    slot.reports = slot.reports
      .then(() => reportRunModelError(ctx, holder, slot.run.agentId, error ?? null))
      .catch((err) => warn(`could not record ${slot.run.agent}'s model error: ${(err as Error).message}`));
  };

  const start = (slot: Slot) => {
    const { run } = slot;
    slot.stopping = false;
    slot.lastErrorLine = undefined;
    slot.modelError = undefined;
    slot.childSeq = run.restartSeq;
    slot.startedAt = Date.now();
    slot.log.note(ctx.now(), `starting sluice drive ${run.driver} --as ${run.agent} --cwd ${run.cwd}`);
    let child: RunChild;
    try {
      child = options.launch(run, {
        log: (text) => slot.log.write(text),
        errorLine: (line) => {
          if (line.trim() !== '') slot.lastErrorLine = line.trim().slice(0, 500);
        },
        outLine: (line) => {
          if (slot.child !== child) return;
          if (isReadyLine(line))
            report(slot, { state: 'running', pid: child.pid ?? null, restarts: slot.restarts });
          const error = modelErrorOfLine(line);
          if (error !== undefined) modelError(slot, error.slice(0, 500));
          else if (isTurnOkLine(line)) modelError(slot, undefined);
        },
      });
    } catch (err) {
      slot.lastErrorLine = `could not start: ${(err as Error).message}`;
      crashed(slot);
      return;
    }
    slot.child = child;
    report(slot, { state: 'starting', pid: child.pid ?? null, restarts: slot.restarts, model_error: null });
    void child.exited.then(({ code, signal }) => exited(slot, child, code, signal));
  };

  const crashed = (slot: Slot) => {
    const ranMs = Date.now() - (slot.startedAt ?? Date.now());
    slot.failures = ranMs >= backoff.resetAfterMs ? 1 : slot.failures + 1;
    const delay = restartDelay(slot.failures, random(), backoff);
    const line = slot.lastErrorLine ?? 'exited without an error line';
    slot.log.note(ctx.now(), `crashed: ${line}; restarting in ${(delay / 1000).toFixed(1)}s`);
    report(slot, { state: 'crashed', pid: null, last_error: line, restarts: slot.restarts });
    slot.cancelTimer = setTimer(delay, () => {
      slot.cancelTimer = undefined;
      if (closed || slots.get(slot.run.agentId) !== slot || slot.run.desired !== 'running') return;
      slot.restarts++;
      start(slot);
    });
  };

  const exited = (slot: Slot, child: RunChild, code: number | null, signal: string | null) => {
    if (slot.child !== child) return;
    slot.child = undefined;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (slot.stopping) {
      slot.log.note(ctx.now(), `stopped (${how})`);
      slot.stopping = false;
      if (closed || slots.get(slot.run.agentId) !== slot) return;
      // A restart (a new spec or Restart) starts at once; a stop stays stopped.
      if (slot.run.desired === 'running') {
        slot.failures = 0;
        start(slot);
      } else report(slot, { state: 'stopped', pid: null });
      return;
    }
    if (!slot.lastErrorLine) slot.lastErrorLine = `exited with ${how}`;
    crashed(slot);
  };

  const stopChild = (slot: Slot) => {
    const child = slot.child;
    if (!child || slot.stopping) return;
    slot.stopping = true;
    slot.log.note(ctx.now(), 'stopping');
    child.terminate();
    const cancel = setTimer(stopGraceMs, () => {
      if (slot.child === child) {
        slot.log.note(ctx.now(), `did not stop within ${stopGraceMs / 1000}s: killed`);
        child.kill();
      }
    });
    void child.exited.then(cancel);
  };

  const apply = (runs: readonly HeldRun[]) => {
    const held = new Map(runs.map((r) => [r.agentId, r]));
    for (const [agentId, slot] of slots) {
      if (held.has(agentId)) continue;
      // The spec was removed (or its lease lost): stop it and forget it.
      slot.cancelTimer?.();
      slots.delete(agentId);
      slot.run = { ...slot.run, desired: 'stopped' };
      stopChild(slot);
      void (slot.child?.exited ?? Promise.resolve()).then(() => slot.log.close());
    }
    for (const run of runs) {
      let slot = slots.get(run.agentId);
      if (!slot) {
        slot = { run, log: openLog(run.agent), failures: 0, restarts: 0, reports: Promise.resolve() };
        slots.set(run.agentId, slot);
        if (run.desired === 'stopped') report(slot, { state: 'stopped', pid: null });
      }
      const before = slot.run;
      slot.run = run;
      if (run.desired === 'stopped') {
        if (slot.cancelTimer) {
          slot.cancelTimer();
          slot.cancelTimer = undefined;
          report(slot, { state: 'stopped', pid: null });
        }
        stopChild(slot);
        continue;
      }
      const asked = before.desired !== 'running' || before.restartSeq !== run.restartSeq;
      if (slot.child) {
        if (slot.childSeq !== run.restartSeq) stopChild(slot);
      } else if (!slot.stopping && (!slot.cancelTimer || asked)) {
        // Not running: start it now (a Start or a Restart also skips a pending backoff delay).
        slot.cancelTimer?.();
        slot.cancelTimer = undefined;
        if (asked) slot.failures = 0;
        start(slot);
      }
    }
  };

  // One pass at a time; a wake during a pass runs one more pass after it.
  let running: Promise<void> = Promise.resolve();
  let again = false;
  let busy = false;
  const pass = async () => {
    try {
      apply(await claimRuns(ctx, holder, leaseMs));
    } catch (err) {
      // The store is unreachable (I10): children keep running as they are; the next wake retries.
      warn(`could not read the agents to run: ${(err as Error).message}`);
    }
  };
  const poke = () => {
    if (closed) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    running = (async () => {
      do {
        again = false;
        await pass();
      } while (again && !closed);
      busy = false;
    })();
  };

  const unwatch = ctx.store.watchChanges(poke);
  ctx.localCommitListeners.add(poke);
  let cancelRenew: () => void = () => {};
  const renew = () => {
    poke();
    cancelRenew = setTimer(renewMs, renew);
  };
  renew();

  return {
    holder,
    poke,
    async settled() {
      while (busy) await running;
      await Promise.all([...slots.values()].map((s) => s.reports));
    },
    async shutdown() {
      if (closed) return;
      closed = true;
      cancelRenew();
      unwatch();
      ctx.localCommitListeners.delete(poke);
      await running;
      const exits: Promise<unknown>[] = [];
      for (const slot of slots.values()) {
        slot.cancelTimer?.();
        if (slot.child) {
          exits.push(slot.child.exited);
          stopChild(slot);
        }
      }
      await Promise.all(exits);
      await Promise.all([...slots.values()].map((s) => s.reports));
      for (const slot of slots.values()) {
        slot.log.note(ctx.now(), 'host shut down');
        slot.log.close();
      }
      try {
        await releaseRuns(ctx, holder);
      } catch (err) {
        warn(`could not release the agents' leases: ${(err as Error).message}`);
      }
    },
  };
}
