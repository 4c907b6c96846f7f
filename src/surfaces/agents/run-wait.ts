import type { AgentRun } from '../../core/wire/index.js';

// What `sluice agent run|start|restart` waits for after asking the host to start a driver
// (docs/agents.md). "starting" is not an answer: a driver whose client dies half a second later
// was "starting" too. The command waits until the driver says it is ready (its client answered
// its handshake: state `running`) or it exited (`crashed`), bounded, and says which.

/** The run fields the wait reads. */
export type RunSnapshot = Pick<AgentRun, 'state' | 'pid' | 'lastError' | 'restarts' | 'stateAt'>;

/** Where a start ended up: the answer `agent run|start|restart` prints. */
export type StartOutcome =
  | { kind: 'running'; run: RunSnapshot }
  | { kind: 'crashed'; run: RunSnapshot }
  /** Still not ready when the wait ran out (a slow client start): not a failure, not a success. */
  | { kind: 'still-starting'; run: RunSnapshot }
  /** No host reported on it since the request: none runs for this home. */
  | { kind: 'no-host'; run: RunSnapshot | null }
  /** The spec was removed meanwhile. */
  | { kind: 'gone' };

export interface StartWait {
  /** Reads the run now (null: no spec). */
  read(): Promise<RunSnapshot | null>;
  /** When the request was committed (ISO): reports older than this are from before it. */
  since: string;
  /** The restart count before the request: a higher one means the driver crashed meanwhile. */
  restartsBefore: number;
  /** How long to wait for the driver to be ready once a host reported on it, ms. */
  waitMs: number;
  /** How long to wait for any host to report on it at all, ms (none may run for this home). */
  hostWaitMs: number;
  /** Milliseconds now (tests pass a fake clock). */
  now?: () => number;
  /** Waits between reads (tests pass one that advances the fake clock). */
  sleep?: (ms: number) => Promise<void>;
  /** Between reads, ms. */
  pollMs?: number;
}

/**
 * Waits until the host reports the driver ready or crashed since `since`, or `waitMs` passed. A
 * crash that the host already followed with a restart (the reads missed the `crashed` report) is
 * still a crash: the restart count went up, and the last error is the crash's line.
 */
export async function waitForStart(wait: StartWait): Promise<StartOutcome> {
  const now = wait.now ?? Date.now;
  const sleep = wait.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const start = now();
  for (;;) {
    const run = await wait.read();
    if (run === null) return { kind: 'gone' };
    const fresh = run.stateAt !== null && run.stateAt >= wait.since;
    if (fresh) {
      if (run.state === 'running') return { kind: 'running', run };
      if (run.state === 'crashed' || (run.restarts > wait.restartsBefore && run.lastError !== null))
        return { kind: 'crashed', run };
    }
    const waited = now() - start;
    if ((!fresh || run.state === 'no-host') && waited >= wait.hostWaitMs) return { kind: 'no-host', run };
    if (waited >= wait.waitMs) return { kind: 'still-starting', run };
    await sleep(wait.pollMs ?? 100);
  }
}
