// Steering with the REAL clients (`sluice drive claude|codex`) against the scripted model server: a
// message sent while a driven turn runs reaches the model in that same turn, and is handled when
// the turn settles. The model holds its first reply until the driver reported the steer, so the
// message provably arrived mid-turn. Also measures send → first model request carrying the body.
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-steer.e2e.test.ts
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { type DriveHome, type DriverProcess, openDriveHome, startDriver } from '../drivers/drive-harness.js';
import { ensureClients } from './support/clients.js';
import {
  isMainAgentRequest,
  type ModelServer,
  type RecordedRequest,
  shellCall,
  startModelServer,
} from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';
// Rounds per client in the mid-turn tests: each is a full steered turn, and the latency is only
// logged. `npm test` runs 3; SLUICE_STEER_ROUNDS=10 gives the 10 that docs/delivery.md's table
// ("Measured") was taken over.
const ROUNDS = Number(process.env.SLUICE_STEER_ROUNDS) || 3;

/** A model that holds its reply to the request carrying `marker` until `release()`. */
class HeldReply {
  private releaseFn: () => void = () => {};
  private seenFn: () => void = () => {};
  readonly released = new Promise<void>((r) => {
    this.releaseFn = r;
  });
  readonly seen = new Promise<void>((r) => {
    this.seenFn = r;
  });
  taken = false;
  constructor(readonly marker: string) {}
  arrived(): void {
    this.seenFn();
  }
  release(): void {
    this.releaseFn();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Whether the model request carries `needle` anywhere (markers hold no JSON-escaped characters). */
const carries = (req: RecordedRequest, needle: string) => JSON.stringify(req.body).includes(needle);

describe.skipIf(!enabled)('drivers steer running turns (real clients)', () => {
  let server: ModelServer;
  let bins: { claude: string; codex: string };
  const cleanups: (() => Promise<void> | void)[] = [];
  let held: HeldReply | undefined;
  let readFile = '';
  /** Whether the held reply is a tool call (the turn goes on) or a final answer (it would end). */
  let toolFirst = true;

  beforeAll(async () => {
    bins = await ensureClients();
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /**
   * The first main call carrying the held marker waits; it then answers with one tool call (a file
   * read), so the turn goes on to a second model call, where a steered message belongs.
   */
  const script = async (req: RecordedRequest) => {
    if (!isMainAgentRequest(req)) return { text: 'ok' };
    const h = held;
    if (h && !h.taken && carries(req, h.marker)) {
      h.taken = true;
      h.arrived();
      await h.released;
      if (!toolFirst) return { text: 'answered without tools' };
      return req.api === 'anthropic'
        ? { toolCalls: [{ name: 'Read', input: { file_path: readFile } }] }
        : { toolCalls: [shellCall(req, 'true')] };
    }
    return { text: 'done' };
  };

  async function rounds(h: DriveHome, d: DriverProcess, n = ROUNDS): Promise<number[]> {
    const latencies: number[] = [];
    const turnsBefore = d.stdout().match(/ ok: /g)?.length ?? 0;
    for (let i = 0; i < n; i++) {
      const first = `first message of round ${i} ${Date.now()}`;
      const during = `sent during the turn of round ${i} ${Date.now()}`;
      held = new HeldReply(first);
      const firstId = await h.send(first);
      await held.seen;
      const sentAt = Date.now();
      const duringId = await h.send(during);
      await d.waitForOutput(new RegExp(`steered: 1 message\\(s\\) \\[${duringId}\\]`), 60_000);
      held.release();
      const settled = await d.waitForOutput(
        new RegExp(`ok: 2 delivered \\[${firstId} ${duringId}\\]`),
        120_000,
      );
      expect(settled).toMatch(/2 handled, 0 returned/);
      const states = await h.states();
      expect(states.filter((s) => s.id === firstId || s.id === duringId).map((s) => s.state)).toEqual([
        'handled',
        'handled',
      ]);
      // The body reached the model in the same turn: the model call after the held one carries it.
      const carrying = server.mainCalls().filter((r) => carries(r, during));
      expect(carrying.length).toBeGreaterThan(0);
      latencies.push(carrying[0]!.at - sentAt);
      held = undefined;
    }
    // One turn per round: the steered message never started a turn of its own.
    expect(d.stdout().match(/ ok: /g)).toHaveLength(turnsBefore + n);
    return latencies;
  }

  // One driver session per client: first a round whose held reply is the final answer (the turn
  // would end), then the rounds whose held reply is a tool call (the turn goes on). A driver and a
  // client per claim proved nothing more and started twice as many processes.
  for (const client of ['claude', 'codex'] as const) {
    const name = client === 'claude' ? 'Claude Code' : 'Codex (turn/steer)';
    test(`${name}: a message sent mid-turn is steered into it and handled when it settles, also while the model gives its final answer`, async () => {
      server.reset(script);
      const h = await openDriveHome();
      cleanups.push(() => h.close());
      let d: DriverProcess;
      if (client === 'claude') {
        const home = makeClaudeHome();
        cleanups.push(() => rmSync(home.root, { recursive: true, force: true }));
        readFile = join(home.cwd, 'notes.txt');
        writeFileSync(readFile, 'notes');
        const env = claudeEnv(server, home, {
          env: { SLUICE_HOME: h.home, SLUICE_CLAUDE_BIN: bins.claude },
        });
        d = startDriver(
          'claude',
          ['--as', h.agent.name, '--cwd', home.cwd, '--', '--no-session-persistence'],
          env,
        );
      } else {
        const home = makeCodexHome({ server });
        cleanups.push(() => rmSync(home.root, { recursive: true, force: true }));
        const env = codexEnv(home, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: bins.codex });
        d = startDriver('codex', ['--as', h.agent.name, '--cwd', home.cwd], env);
      }
      cleanups.push(() => d.stop());
      await d.waitForOutput(/ready/, 60_000);
      // Steered while the model gives its final answer: it still reaches the model before the turn settles.
      toolFirst = false;
      try {
        await rounds(h, d, 1);
      } finally {
        toolFirst = true;
      }
      const latencies = await rounds(h, d);
      console.log(`${client} steer latency ms: ${latencies.join(', ')}; median ${median(latencies)}`);
    }, 600_000);
  }
});
