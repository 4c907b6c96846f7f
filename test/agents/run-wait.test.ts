// What `sluice agent run|start|restart` waits for (src/surfaces/agents/run-wait.ts), with the host's
// reports scripted and a fake clock: "starting" is never the answer while the wait lasts; ready is
// `running`, an exit is `crashed` (also when the host already restarted it), a slow start says so
// at the bound, and no report at all is "no host".
import { describe, expect, it } from 'vitest';
import { type RunSnapshot, waitForStart } from '../../src/surfaces/agents/run-wait.js';

const SINCE = '2026-01-01T00:00:10.000Z';
const before = {
  state: 'stopped',
  pid: null,
  lastError: null,
  restarts: 0,
  stateAt: '2026-01-01T00:00:01.000Z',
} as const;
const at = (s: number) => `2026-01-01T00:00:${String(10 + s).padStart(2, '0')}.000Z`;

/** Each read returns the next report (the last one repeats); the clock moves by each sleep. */
function scripted(reports: (RunSnapshot | null)[]) {
  let clock = 0;
  let reads = 0;
  return {
    read: async () => reports[Math.min(reads++, reports.length - 1)] ?? null,
    now: () => clock,
    sleep: async (ms: number) => {
      clock += ms;
    },
    reads: () => reads,
  };
}

const wait = (s: ReturnType<typeof scripted>, restartsBefore = 0) =>
  waitForStart({ ...s, since: SINCE, restartsBefore, waitMs: 15_000, hostWaitMs: 5000, pollMs: 100 });

describe('waiting for a started driver', () => {
  it('keeps waiting through "starting" and answers running once the driver is ready', async () => {
    const s = scripted([
      before,
      { state: 'starting', pid: 7, lastError: null, restarts: 0, stateAt: at(0) },
      { state: 'starting', pid: 7, lastError: null, restarts: 0, stateAt: at(0) },
      { state: 'running', pid: 7, lastError: null, restarts: 0, stateAt: at(1) },
    ]);
    expect(await wait(s)).toEqual({
      kind: 'running',
      run: { state: 'running', pid: 7, lastError: null, restarts: 0, stateAt: at(1) },
    });
    expect(s.reads()).toBe(4);
  });

  it('answers crashed with the crash line when the client exits before it is ready', async () => {
    const crashed = {
      state: 'crashed',
      pid: null,
      lastError: 'sluice: unavailable: claude exited (code 1): error: unknown option',
      restarts: 0,
      stateAt: at(1),
    } as const;
    const s = scripted([
      { state: 'starting', pid: 7, lastError: null, restarts: 0, stateAt: at(0) },
      crashed,
    ]);
    expect(await wait(s)).toEqual({ kind: 'crashed', run: crashed });
  });

  it('a crash the host already restarted (the reads missed it) is still a crash', async () => {
    const restarted = { state: 'starting', pid: 8, lastError: 'boom', restarts: 3, stateAt: at(2) } as const;
    expect(await wait(scripted([restarted]), 2)).toEqual({ kind: 'crashed', run: restarted });
  });

  it('an old crash line from before the request does not count', async () => {
    const s = scripted([
      { state: 'starting', pid: 9, lastError: 'old', restarts: 2, stateAt: at(0) },
      { state: 'running', pid: 9, lastError: 'old', restarts: 2, stateAt: at(1) },
    ]);
    expect((await wait(s, 2)).kind).toBe('running');
  });

  it('a start slower than the bound is reported as still starting, at the bound', async () => {
    const s = scripted([{ state: 'starting', pid: 7, lastError: null, restarts: 0, stateAt: at(0) }]);
    expect((await wait(s)).kind).toBe('still-starting');
    expect(s.now()).toBe(15_000);
  });

  it('no report since the request is "no host" after the shorter bound', async () => {
    const s = scripted([{ ...before, state: 'no-host' }]);
    expect(await wait(s)).toEqual({ kind: 'no-host', run: { ...before, state: 'no-host' } });
    expect(s.now()).toBe(5000);
  });

  it('a spec removed meanwhile ends the wait', async () => {
    expect(await wait(scripted([null]))).toEqual({ kind: 'gone' });
  });
});
