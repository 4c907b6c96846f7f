// `sluice agent run` says where the agent stands only once the host knows (docs/agents.md): a driver
// whose client dies before it is ready is reported as the crash it is — its line on stderr, exit 1 —
// never as "starting", and `agent ls` then shows it not running with that line; a driver that
// gets ready is "running". A real supervisor (in this process, fake drivers) and the CLI.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HeldRun } from '../../src/host/agents/agent-runs.js';
import {
  type ChildOutput,
  type RunChild,
  type Supervisor,
  startSupervisor,
} from '../../src/surfaces/agents/supervisor.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, type TestHost } from '../support/host.js';

/** A driver that does what `behave` says as soon as it is started. */
function fakeDriver(behave: (run: HeldRun, out: ChildOutput) => { code: number } | undefined) {
  let stop: (r: { code: number | null; signal: string | null }) => void = () => {};
  return (run: HeldRun, out: ChildOutput): RunChild => {
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      stop = resolve;
    });
    queueMicrotask(() => {
      const ended = behave(run, out);
      if (ended) stop({ code: ended.code, signal: null });
    });
    return {
      pid: 4242,
      exited,
      terminate: () => stop({ code: 0, signal: null }),
      kill: () => stop({ code: null, signal: 'SIGKILL' }),
    };
  };
}

describe('agent run waits for the driver to be ready or to crash', { timeout: 60_000 }, () => {
  let h: TestHost;
  let sup: Supervisor | undefined;
  const cli = (...args: string[]) => runCliHere(args, { home: h.home });
  const open = (launch: ReturnType<typeof fakeDriver>) => {
    sup = startSupervisor(h.ctx, {
      launch,
      // A restart never comes during the test: the crash stays the last report.
      setTimer: (ms, fn) => {
        if (ms < 60_000) return () => {};
        const t = setTimeout(fn, ms);
        return () => clearTimeout(t);
      },
      openLog: () => ({ write: () => {}, note: () => {}, close: () => {} }),
    });
  };

  beforeEach(async () => {
    h = await openTestHost();
  });
  afterEach(async () => {
    await sup?.shutdown();
    sup = undefined;
    await h.close();
  });

  it('a client that exits before it is ready: the crash line on stderr, exit 1, agent ls not running', async () => {
    const line = "sluice: unavailable: claude exited (code 1): error: unknown option '--bogus'";
    open(
      fakeDriver((_run, out) => {
        out.errorLine(line);
        return { code: 1 };
      }),
    );
    const run = await cli('agent', 'run', 'helper', '--driver', 'claude', '--cwd', h.home, '--', '--bogus');
    expect(run.stdout).toContain('added agent helper (settles by turns)');
    expect(run.stdout).not.toMatch(/is (starting|running)/);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`^sluice: unavailable: helper crashed: ${line.replace(/[()'-]/g, '\\$&')}; `),
    );
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    const ls = JSON.parse((await cli('agent', 'ls', '--json')).stdout) as {
      name: string;
      run: { state: string; lastError: string | null };
    }[];
    expect(ls.find((a) => a.name === 'helper')?.run).toMatchObject({ state: 'crashed', lastError: line });
    // start (at once, though a restart is pending) and restart say the same
    const start = await cli('agent', 'start', 'helper');
    expect(start.code, start.stdout).toBe(1);
    expect(start.stderr).toMatch(/^sluice: unavailable: helper crashed: /);
    const again = await cli('agent', 'restart', 'helper');
    expect(again.code, again.stdout).toBe(1);
    expect(again.stderr).toMatch(/^sluice: unavailable: helper crashed: /);
  });

  it('a driver that gets ready is running (pid and log)', async () => {
    open(
      fakeDriver((run, out) => {
        out.outLine(`sluice drive claude: ${run.agent} ready (log /x)`);
        return undefined;
      }),
    );
    const run = await cli('agent', 'run', 'helper', '--driver', 'claude', '--cwd', h.home);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^helper is running \(pid 4242\); log: .*agent-helper\.log$/m);
  });
});
