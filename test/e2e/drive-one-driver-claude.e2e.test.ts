// One agent, one driver, with the REAL Claude Code client against the scripted model server: two
// `sluice drive claude --as bot` started at once leave exactly one driving (the other refused in one
// coded line, having changed nothing), the survivor's turns settle, and the lock passes on when its
// driver stops or dies. Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-one-driver-claude.e2e.test.ts
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  type DriveHome,
  type DriverProcess,
  deliveredTurns,
  openDriveHome,
  startDriver,
} from '../drivers/drive-harness.js';
import { ensureClients } from './support/clients.js';
import { isMainAgentRequest, type ModelServer, startModelServer } from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';

const enabled = process.env.SLUICE_E2E === '1';

/** How one driver's start ended: ready (its ready line) or exited (code and stderr). */
async function startOutcome(d: DriverProcess): Promise<'ready' | 'exited'> {
  return Promise.race([
    d.waitForOutput(/ bot ready /, 120_000).then(() => 'ready' as const),
    d.exited.then(() => 'exited' as const),
  ]);
}

describe.skipIf(!enabled)('one agent, one driver (real Claude Code)', () => {
  let server: ModelServer;
  let claudeBin: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    claudeBin = (await ensureClients()).claude;
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(): Promise<{ h: DriveHome; start: () => DriverProcess }> {
    const h = await openDriveHome();
    const claudeHome = makeClaudeHome();
    cleanups.push(() => rmSync(claudeHome.root, { recursive: true, force: true }));
    const env = claudeEnv(server, claudeHome, { env: { SLUICE_HOME: h.home, SLUICE_CLAUDE_BIN: claudeBin } });
    cleanups.push(() => h.close());
    const start = () => {
      const d = startDriver(
        'claude',
        ['--as', h.agent.name, '--cwd', claudeHome.cwd, '--', '--no-session-persistence'],
        env,
      );
      cleanups.push(() => d.stop());
      return d;
    };
    return { h, start };
  }

  const mainCalls = () => server.requests.filter(isMainAgentRequest);

  test('two drivers started at once: one drives, the other is refused in one line; the survivor settles the turn', async () => {
    server.reset((req, ctx) =>
      isMainAgentRequest(req) ? { text: `turn ${ctx.mainIndex}` } : { text: 'side' },
    );
    const { h, start } = await setup();
    const drivers = [start(), start()];
    const outcomes = await Promise.all(drivers.map(startOutcome));
    expect([...outcomes].sort()).toEqual(['exited', 'ready']);
    const winner = drivers[outcomes.indexOf('ready')]!;
    const loser = drivers[outcomes.indexOf('exited')]!;
    expect((await loser.exited).code).toBe(1);
    const line = `sluice: conflict: agent bot is already driven by sluice drive claude (pid ${winner.child.pid} on ${hostname()}, home ${h.home}); stop that driver first\n`;
    expect(loser.stderr()).toBe(line);
    expect(loser.stdout()).toBe('');

    const id = await h.send('hello');
    await winner.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);
    expect(deliveredTurns(mainCalls())).toEqual([[id]]);
    // The driver's own turn log names one session: the refused one never started a client.
    const log = readFileSync(join(h.home, 'logs', 'drive-bot.log'), 'utf8');
    expect(log.match(/"event":"start"/g)).toHaveLength(1);
  }, 300_000);

  test('the lock passes on: after a driver stops, and at once after one is killed (its pid is gone)', async () => {
    server.reset((req, ctx) =>
      isMainAgentRequest(req) ? { text: `turn ${ctx.mainIndex}` } : { text: 'side' },
    );
    const { h, start } = await setup();
    const first = start();
    expect(await startOutcome(first)).toBe('ready');
    await first.stop();
    const second = start();
    expect(await startOutcome(second)).toBe('ready');
    // Killed outright, it cannot release the lock; its pid is gone, so the next driver takes over.
    second.killTree();
    await second.exited;
    const third = start();
    expect(await startOutcome(third)).toBe('ready');
    const id = await h.send('after the handovers');
    await third.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);
    expect(existsSync(join(h.home, 'logs', 'drive-bot.log'))).toBe(true);
  }, 300_000);

  test('a driver refused while another runs: the running one is untouched and still settles', async () => {
    server.reset((req, ctx) =>
      isMainAgentRequest(req) ? { text: `turn ${ctx.mainIndex}` } : { text: 'side' },
    );
    const { h, start } = await setup();
    const first = start();
    expect(await startOutcome(first)).toBe('ready');
    const second = start();
    expect(await startOutcome(second)).toBe('exited');
    expect(second.stderr()).toMatch(/^sluice: conflict: agent bot is already driven by /);
    expect(second.stdout()).toBe('');
    const id = await h.send('still yours');
    await first.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);
  }, 300_000);
});
