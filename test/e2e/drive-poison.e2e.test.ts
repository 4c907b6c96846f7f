// Poison attachments against the REAL clients (issue 11 item 3): a truncated PNG and a pixel bomb
// sent to a driven agent. Before the fix `sluice drive claude` exited 70 before every turn, on every
// restart. Now the turn goes on with a "could not be attached" line for each, the driver keeps
// running and later messages are handled — with Claude Code and with the Codex app-server.
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-poison.e2e.test.ts
import { rmSync } from 'node:fs';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { withdrawMessage } from '../../src/host/queue/queue.js';
import {
  type DriveHome,
  type DriverProcess,
  envelopeIds,
  envelopesIn,
  eventually,
  openDriveHome,
  startDriver,
} from '../drivers/drive-harness.js';
import { pixelBombPng, truncatedPng } from '../support/poison-images.js';
import { ensureClients } from './support/clients.js';
import {
  findText,
  isMainAgentRequest,
  type ModelServer,
  startModelServer,
  userContent,
} from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

describe.skipIf(!enabled)('drivers survive poison attachments (real clients)', () => {
  let server: ModelServer;
  let bins: { claude: string; codex: string };
  const cleanups: (() => Promise<void> | void)[] = [];

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

  function startClaude(h: DriveHome): DriverProcess {
    const home = makeClaudeHome();
    cleanups.push(() => rmSync(home.root, { recursive: true, force: true }));
    const env = claudeEnv(server, home, { env: { SLUICE_HOME: h.home, SLUICE_CLAUDE_BIN: bins.claude } });
    const d = startDriver(
      'claude',
      ['--as', h.agent.name, '--cwd', home.cwd, '--', '--no-session-persistence'],
      env,
    );
    cleanups.push(() => d.stop());
    return d;
  }

  function startCodex(h: DriveHome): DriverProcess {
    const home = makeCodexHome({ server });
    cleanups.push(() => rmSync(home.root, { recursive: true, force: true }));
    const env = codexEnv(home, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: bins.codex });
    const d = startDriver('codex', ['--as', h.agent.name, '--cwd', home.cwd], env);
    cleanups.push(() => d.stop());
    return d;
  }

  test.each([
    ['claude', startClaude],
    ['codex', startCodex],
  ] as const)(
    '%s: the turn goes on with a "could not be attached" line per poison image; later messages are handled',
    async (_client, startClient) => {
      server.reset(() => ({ text: 'looked at it' }));
      const h = await openDriveHome();
      cleanups.push(() => h.close());
      const good = await sharp({ create: { width: 24, height: 16, channels: 3, background: '#c36' } })
        .png()
        .toBuffer();
      const poisoned = await h.send('three pictures, two of them broken', [
        { bytes: truncatedPng(), name: 'broken.png' },
        { bytes: pixelBombPng(), name: 'bomb.png' },
        { bytes: good, name: 'good.png' },
      ]);
      const d = startClient(h);
      await d.waitForOutput(/ ok: 1 delivered/, 180_000);

      const first = server.mainCalls()[0]!;
      const broken = findText(first, 'could not be attached: the image could not be decoded');
      expect(broken.map((t) => t.text).join('\n')).toContain(
        `"broken.png" (image/png, ${truncatedPng().length} bytes)`,
      );
      const bomb = findText(
        first,
        `"bomb.png" (image/png, ${pixelBombPng().length} bytes) from message ${poisoned} could not be attached: the image is larger than 100 megapixels and is not decoded`,
      );
      expect(bomb).toHaveLength(1);
      // The good picture still reaches the model as an image, and it is the only one.
      expect(userContent(first).images).toHaveLength(1);

      const later = await h.send('and then this one');
      await d.waitForOutput(new RegExp(` ok: 1 delivered \\[${later}\\]`), 180_000);
      expect(await h.states()).toEqual([
        { id: poisoned, state: 'handled', failure_kind: null },
        { id: later, state: 'handled', failure_kind: null },
      ]);
      expect(d.child.exitCode).toBeNull();
      expect(d.stderr()).toBe('');
    },
    400_000,
  );

  test.each([
    ['claude', startClaude],
    ['codex', startCodex],
  ] as const)(
    '%s: a driver killed again and again while carrying one message returns it on the next start instead of crash-looping; the rest is handled',
    async (_client, startClient) => {
      let hold = true;
      server.reset((req) => {
        if (!isMainAgentRequest(req)) return { text: 'side' };
        return hold ? { text: 'late', delayMs: 120_000 } : { text: 'done' };
      });
      const h = await openDriveHome();
      cleanups.push(() => h.close());
      const poison = await h.send('every turn with this one dies');
      const innocent = await h.send('this one is fine');
      for (let run = 1; run <= 3; run++) {
        const d = startClient(h);
        await eventually(
          async () => (server.mainCalls().length >= run ? true : undefined),
          120_000,
          `model call ${run}`,
        );
        d.killDriver(); // as a crash or the OOM killer would
        await d.exited;
        d.killTree();
      }
      // One kill re-delivers the same turn; a repeat sends the message alone. (Each run's client is
      // a fresh session, and its one model call hangs: main call i is run i's turn.)
      const carried = (i: number) => envelopeIds(envelopesIn(server.mainCalls()[i]!).at(-1) ?? '');
      expect([carried(0), carried(1), carried(2)]).toEqual([
        [poison, innocent],
        [poison, innocent],
        [poison],
      ]);

      hold = false;
      const d = startClient(h);
      const line = await d.waitForOutput(/ returned /, 120_000);
      expect(line).toContain(
        `returned ${poison} (repeated_failure): 3 turns carrying it ended without settling; last: the client or the driver stopped during the turn; resume or withdraw it to go on`,
      );
      expect(await h.states()).toEqual([
        { id: poison, state: 'returned', failure_kind: 'repeated_failure' },
        { id: innocent, state: 'waiting', failure_kind: null },
      ]);
      await withdrawMessage(h.ctx, h.owner, h.agent.name, poison);
      await d.waitForOutput(new RegExp(` ok: 1 delivered \\[${innocent}\\]`), 120_000);
      expect((await h.states())[1]).toEqual({ id: innocent, state: 'handled', failure_kind: null });
      expect(carried(server.mainCalls().length - 1)).toEqual([innocent]);
      expect(d.child.exitCode).toBeNull();
    },
    600_000,
  );
});
