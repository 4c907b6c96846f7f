// `sluice agent run` from a second Sluice home on the same store, with both homes' `sluice serve`
// up, on SQLite and PostgreSQL: the old home's host stops its driver at once (the moved spec's
// lease is cleared), and the new home's driver drives only once the old one has let the agent go —
// never two drivers of the agent up at once. Real supervisors in this process; fake drivers that
// hold the agent as `sluice drive` does (host/agents/driver-lock.ts, supervised).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerAgentRun } from '../../src/host/agents/agent-runs.js';
import { holdDriver } from '../../src/host/agents/driver-lock.js';
import { createHostContext, type HostContext } from '../../src/host/identity/context.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { type LaunchRun, type Supervisor, startSupervisor } from '../../src/surfaces/agents/supervisor.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';

/** A promise with its resolver, for steps the test lets happen. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe.each(backendsUnderTest())('a run moved to another home (%s)', (backend) => {
  let h: ConformanceHost;
  beforeAll(async () => {
    h = await openConformanceHost(backend, 'handover');
  }, 60_000);
  afterAll(async () => h?.close());

  it('the old host stops its driver, and the new one drives only after it let go: never two up', async () => {
    const homeB = join(h.home, 'second-home');
    mkdirSync(homeB);
    const ctxB = await createHostContext({ store: (await h.sibling()).store, home: homeB });
    const events: string[] = [];
    const up = new Set<string>();
    let mostUp = 0;
    const readyA = gate();
    const stopAskedA = gate();
    const letStopA = gate();
    const readyB = gate();
    // A driver as `sluice drive` under `sluice serve` runs: it holds the agent before it is ready,
    // and gives it back as it exits. Home A's driver stops only when the test lets it.
    const driver =
      (name: 'A' | 'B', ctx: HostContext, ready: () => void, stopping: Promise<void>): LaunchRun =>
      (run, out) => {
        let exit: (r: { code: number | null; signal: string | null }) => void = () => {};
        const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
          exit = resolve;
        });
        const held = (async () => {
          const agent = await resolvePrincipal(ctx, run.agent);
          const hold = await holdDriver(
            ctx,
            agent,
            { client: 'claude', pid: process.pid, supervised: true },
            { onLost: () => events.push(`${name} lost`), waitMs: 30_000 },
          );
          up.add(name);
          mostUp = Math.max(mostUp, up.size);
          events.push(`${name} ready`);
          out.outLine(`sluice drive claude: ${run.agent} ready (log x)`);
          ready();
          return hold;
        })();
        const terminate = () => {
          events.push(`${name} stop asked`);
          if (name === 'A') stopAskedA.open();
          void (async () => {
            const hold = await held;
            await stopping;
            await hold.release();
            up.delete(name);
            events.push(`${name} exited`);
            exit({ code: 0, signal: null });
          })();
        };
        return { pid: 4242, exited, terminate, kill: terminate };
      };
    const quietLog = () => ({ write: () => {}, note: () => {}, close: () => {} });
    const supervisors: Supervisor[] = [
      startSupervisor(h.ctx, {
        launch: driver('A', h.ctx, readyA.open, letStopA.promise),
        openLog: quietLog,
      }),
      startSupervisor(ctxB, { launch: driver('B', ctxB, readyB.open, Promise.resolve()), openLog: quietLog }),
    ];
    try {
      await registerAgentRun(h.ctx, h.owner, { name: 'mover', driver: 'claude', cwd: h.home, args: [] });
      await readyA.promise;
      // `agent run` again, from the second home: the spec moves there.
      await registerAgentRun(ctxB, h.owner, { name: 'mover', driver: 'claude', cwd: homeB, args: [] });
      await stopAskedA.promise;
      letStopA.open();
      await readyB.promise;
      expect(events).toEqual(['A ready', 'A stop asked', 'A exited', 'B ready']);
      expect(mostUp).toBe(1);
    } finally {
      letStopA.open();
      for (const s of supervisors) await s.shutdown();
    }
  }, 60_000);
});
