// The host's supervisor of run specs (src/surfaces/agents/supervisor.ts) with fake driver processes
// and timers run by hand: it starts what is asked to run, restarts a crashed driver after a growing,
// jittered delay, records the crash with its last error line, stops on request and on shutdown,
// and restarts on a new spec or Restart. The store is a real one (SQLite).
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  agentRunStatus,
  controlAgentRun,
  type HeldRun,
  registerAgentRun,
} from '../../src/host/agents/agent-runs.js';
import {
  type ChildOutput,
  DEFAULT_BACKOFF,
  type RunChild,
  restartDelay,
  type Supervisor,
  startSupervisor,
} from '../../src/surfaces/agents/supervisor.js';
import { openTestHost, type TestHost } from '../support/host.js';

class FakeChild implements RunChild {
  static nextPid = 1000;
  /** Set for the cleanup: a driver asked to stop then exits at once. */
  static exitOnTerminate = false;
  readonly pid = FakeChild.nextPid++;
  terminated = false;
  killed = false;
  private finish!: (r: { code: number | null; signal: string | null }) => void;
  readonly exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    this.finish = resolve;
  });
  constructor(
    readonly run: HeldRun,
    readonly output: ChildOutput,
  ) {}
  terminate() {
    this.terminated = true;
    if (FakeChild.exitOnTerminate) this.finish({ code: 0, signal: null });
  }
  kill() {
    this.killed = true;
    this.finish({ code: null, signal: 'SIGKILL' });
  }
  /** The driver printing its ready line. */
  ready() {
    this.output.outLine(`sluice drive claude: ${this.run.agent} ready (log …)`);
  }
  /** A line the driver prints on stdout (its status lines, src/surfaces/drivers/status-lines.ts). */
  say(line: string) {
    this.output.log(`${line}\n`);
    this.output.outLine(line);
  }
  exit(code: number, ...stderr: string[]) {
    for (const line of stderr) {
      this.output.log(`${line}\n`);
      this.output.errorLine(line);
    }
    this.finish({ code, signal: null });
  }
}

interface Timer {
  ms: number;
  fn: () => void;
  cancelled: boolean;
}

const RENEW_MS = 987_654;

/** Polls `check` until it holds (the supervisor acts on store changes asynchronously). */
async function until<T>(check: () => T | undefined | false | Promise<T | undefined | false>, what: string) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('supervisor', { timeout: 60_000 }, () => {
  let h: TestHost;
  let children: FakeChild[];
  let timers: Timer[];
  let logLines: string[];
  let sup: Supervisor;
  let randoms: number[];

  const open = (overrides: Partial<Parameters<typeof startSupervisor>[1]> = {}) =>
    startSupervisor(h.ctx, {
      launch: (run, output) => {
        const child = new FakeChild(run, output);
        children.push(child);
        return child;
      },
      renewMs: RENEW_MS,
      stopGraceMs: 5000,
      random: () => randoms.shift() ?? 0.5,
      setTimer: (ms, fn) => {
        const timer = { ms, fn, cancelled: false };
        timers.push(timer);
        return () => {
          timer.cancelled = true;
        };
      },
      openLog: (agent) => ({
        write: (text) => logLines.push(`${agent}| ${text}`),
        note: (_at, line) => logLines.push(`${agent}| [sluice] ${line}`),
        close: () => {},
      }),
      ...overrides,
    });
  const restartTimers = () => timers.filter((t) => !t.cancelled && t.ms !== RENEW_MS && t.ms !== 5000);
  const status = async () => (await agentRunStatus(h.ctx, h.owner, 'bot'))!;
  const register = (args: string[] = []) =>
    registerAgentRun(h.ctx, h.owner, { name: 'bot', driver: 'claude', cwd: h.home, args });
  const settle = async () => {
    sup.poke();
    await sup.settled();
  };

  beforeEach(async () => {
    h = await openTestHost();
    children = [];
    timers = [];
    logLines = [];
    randoms = [];
    FakeChild.exitOnTerminate = false;
  });
  afterEach(async () => {
    FakeChild.exitOnTerminate = true;
    for (const child of children) if (child.terminated) child.exit(0);
    await sup?.shutdown();
    await h.close();
  });

  it('starts a registered agent and reports it running once the driver is ready', async () => {
    sup = open();
    await register();
    const child = await until(() => children[0], 'the driver to start');
    expect(child.run).toMatchObject({ agent: 'bot', driver: 'claude', cwd: h.home, args: [] });
    await settle();
    expect((await status()).state).toBe('starting');
    child.ready();
    await until(async () => (await status()).state === 'running', 'running');
    expect((await status()).pid).toBe(child.pid);
  });

  it('a model error the running driver reports is its status until a turn succeeds; a crash line stays lastError', async () => {
    sup = open();
    await register();
    const child = await until(() => children[0], 'the driver to start');
    child.ready();
    await until(async () => (await status()).state === 'running', 'running');
    expect((await status()).modelError).toBeNull();
    const error = 'Reconnecting... waiting for network (Connection failed: error sending request)';
    child.say(`03:04:05 bot model error: ${error} (codex retries; the driver gives up after 180 s)`);
    await until(async () => (await status()).modelError === error, 'the model error');
    expect(await status()).toMatchObject({ state: 'running', lastError: null, pid: child.pid });
    // A turn that fails on it keeps it; a later line about something else does not touch it.
    child.say(
      '03:07:05 bot t_vprm42t1jwmsphq3 failed (model_error): 1 delivered [01M8], 0 handled, 1 returned, 180.3s',
    );
    child.say('03:07:06 bot t_vprm42t1jwmsphq4 steered: 1 message(s) [01M9]');
    await settle();
    expect((await status()).modelError).toBe(error);
    // A turn that succeeds clears it.
    child.say('03:09:00 bot t_vprm42t1jwmsphq5 ok: 1 delivered [01M8], 1 handled, 0 returned, 3.1s');
    await until(async () => (await status()).modelError === null, 'cleared by a good turn');
    // Shown only while the driver runs: a crash is lastError, and the next start begins clean.
    child.say(`03:10:00 bot model error: ${error} (the turn fails)`);
    await until(async () => (await status()).modelError === error, 'the model error again');
    child.exit(1, 'sluice: unavailable: codex app-server exited (code 1)');
    await until(async () => (await status()).state === 'crashed', 'crashed');
    expect(await status()).toMatchObject({
      modelError: null,
      lastError: 'sluice: unavailable: codex app-server exited (code 1)',
    });
    restartTimers()[0]!.fn();
    await until(() => children[1], 'the restart');
    await settle();
    expect((await status()).modelError).toBeNull();
  });

  it('restarts a crashed driver after a growing jittered delay and records the last error line', async () => {
    sup = open();
    await register();
    const first = await until(() => children[0], 'the driver to start');
    randoms.push(0, 1, 0.5);
    first.exit(1, 'some progress', 'sluice: unavailable: claude exited (code 1): no API key');
    await until(async () => (await status()).state === 'crashed', 'crashed');
    const crashed = await status();
    expect(crashed.lastError).toBe('sluice: unavailable: claude exited (code 1): no API key');
    expect(crashed.pid).toBeNull();
    // First delay: base 1 s jittered with random 0 → half of it.
    expect(restartTimers().map((t) => t.ms)).toEqual([500]);
    expect(children).toHaveLength(1);
    restartTimers()[0]!.fn();
    const second = await until(() => children[1], 'the restart');
    expect((await status()).restarts).toBe(1);
    second.exit(1); // no stderr line: the exit itself is the error line
    await until(async () => (await status()).lastError === 'exited with code 1', 'second crash');
    // Second delay: 2 s with random 1 → all of it; the first timer has fired.
    expect(restartTimers().map((t) => t.ms)).toEqual([500, 2000]);
    restartTimers()[1]!.fn();
    const third = await until(() => children[2], 'the second restart');
    third.exit(2, 'boom');
    await until(async () => (await status()).lastError === 'boom', 'third crash');
    expect(restartTimers().at(-1)!.ms).toBe(3000); // 4 s × (0.5 + 0.5 × 0.5)
    expect(logLines.some((l) => l.includes('[sluice] crashed: boom; restarting in 3.0s'))).toBe(true);
  });

  it('stop ends the driver and it stays stopped; start runs it again at once', async () => {
    sup = open();
    await register();
    const child = await until(() => children[0], 'the driver to start');
    await controlAgentRun(h.ctx, h.owner, 'bot', 'stop');
    await until(() => child.terminated, 'SIGTERM');
    expect((await status()).state).toBe('stopping');
    child.exit(0);
    await until(async () => (await status()).state === 'stopped', 'stopped');
    await settle();
    expect(children).toHaveLength(1);
    expect(restartTimers()).toHaveLength(0);
    await controlAgentRun(h.ctx, h.owner, 'bot', 'start');
    await until(() => children[1], 'started again');
  });

  it('stop during a restart delay cancels the restart', async () => {
    sup = open();
    await register();
    (await until(() => children[0], 'start')).exit(1, 'bad');
    await until(() => restartTimers().length === 1, 'a restart timer');
    await controlAgentRun(h.ctx, h.owner, 'bot', 'stop');
    await until(async () => (await status()).state === 'stopped', 'stopped');
    expect(restartTimers()).toHaveLength(0);
    expect(children).toHaveLength(1);
  });

  it('Restart (and a spec registered again) stops the driver and starts a new one', async () => {
    sup = open();
    await register();
    const first = await until(() => children[0], 'start');
    await controlAgentRun(h.ctx, h.owner, 'bot', 'restart');
    await until(() => first.terminated, 'SIGTERM');
    first.exit(0);
    const second = await until(() => children[1], 'the new driver');
    await register(['--model', 'x']);
    await until(() => second.terminated, 'SIGTERM for the new spec');
    second.exit(0);
    const third = await until(() => children[2], 'the driver of the new spec');
    expect(third.run.args).toEqual(['--model', 'x']);
  });

  it('a driver that ignores SIGTERM is killed after the grace period', async () => {
    sup = open();
    await register();
    const child = await until(() => children[0], 'start');
    await controlAgentRun(h.ctx, h.owner, 'bot', 'stop');
    await until(() => child.terminated, 'SIGTERM');
    const grace = timers.find((t) => t.ms === 5000 && !t.cancelled)!;
    grace.fn();
    expect(child.killed).toBe(true);
    await until(async () => (await status()).state === 'stopped', 'stopped');
  });

  it('shutdown stops every driver and releases the runs; the next host starts them again', async () => {
    await registerAgentRun(h.ctx, h.owner, { name: 'other', driver: 'codex', cwd: h.home, args: [] });
    sup = open();
    await register();
    await until(() => children.length === 2, 'both drivers');
    const [a, b] = children as [FakeChild, FakeChild];
    const done = sup.shutdown();
    await until(() => a.terminated && b.terminated, 'SIGTERM to both');
    a.exit(0);
    b.exit(0);
    await done;
    // Asked to run, held by nobody: waiting for a host.
    expect((await status()).state).toBe('no-host');
    expect(restartTimers()).toHaveLength(0);
    sup = open();
    await until(() => children.length === 4, 'both started by the next host');
  });

  it('a second supervisor on the same home does not start what the first holds', async () => {
    sup = open();
    await register();
    await until(() => children[0], 'start');
    const second = open({ holder: 'second' });
    second.poke();
    await second.settled();
    expect(children).toHaveLength(1);
    await second.shutdown();
    expect((await status()).state).not.toBe('no-host');
  });
});

describe('restartDelay', () => {
  it('stays within [half, all] of min(max, base × 2^(n−1)) and never shrinks as failures grow', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (n, r) => {
          const full = Math.min(DEFAULT_BACKOFF.maxMs, DEFAULT_BACKOFF.baseMs * 2 ** Math.min(n - 1, 30));
          const d = restartDelay(n, r, DEFAULT_BACKOFF);
          expect(d).toBeGreaterThanOrEqual(Math.floor(full / 2));
          expect(d).toBeLessThanOrEqual(full);
          expect(restartDelay(n + 1, r, DEFAULT_BACKOFF)).toBeGreaterThanOrEqual(d);
        },
      ),
    );
  });
});
