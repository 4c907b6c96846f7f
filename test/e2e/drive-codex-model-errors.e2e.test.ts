// `sluice drive codex` when Codex cannot reach its model: the REAL Codex app-server, pointed at a
// port nobody listens on, reports "Reconnecting... waiting for network" (willRetry: true) again and
// again and never ends the turn. The driver shows the error, gives up after
// $SLUICE_CODEX_RETRY_LIMIT_MS (set low here), interrupts the turn and returns its message as
// model_error with Codex's text, as a Claude turn does on an API error. Opt-in:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-codex-model-errors.e2e.test.ts
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { readMessageStatus } from '../../src/host/messages/message-status.js';
import { openDriveHome, startDriver } from '../drivers/drive-harness.js';
import { ensureClients } from './support/clients.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

/** A loopback port that refuses connections: bound on port 0, then closed again. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe.skipIf(!enabled)('sluice drive codex: a model Codex cannot reach (real Codex app-server)', () => {
  let codexBin: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    codexBin = (await ensureClients()).codex;
  }, 600_000);
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  test('the retrying error is shown, then the turn is interrupted and the message returned as model_error', async () => {
    const h = await openDriveHome();
    cleanups.push(() => h.close());
    const codexHome = makeCodexHome({ server: `http://127.0.0.1:${await deadPort()}/v1` });
    cleanups.push(() => rmSync(codexHome.root, { recursive: true, force: true }));
    const env = codexEnv(codexHome, {
      SLUICE_HOME: h.home,
      SLUICE_CODEX_BIN: codexBin,
      SLUICE_CODEX_RETRY_LIMIT_MS: '8000',
    });
    const id = await h.send('anyone there?');
    const d = startDriver('codex', ['--as', h.agent.name, '--cwd', codexHome.cwd], env);
    cleanups.push(() => d.stop());

    const shown = await d.waitForOutput(/ model error: /, 120_000);
    expect(shown).toMatch(/bot model error: .+ \(codex retries; the driver gives up after 8 s\)/);
    await d.waitForOutput(/failed \(model_error\): 1 delivered/, 120_000);
    expect(await h.states()).toEqual([{ id, state: 'returned', failure_kind: 'model_error' }]);
    const status = await readMessageStatus(h.ctx, h.owner, id);
    expect(status.recipients).toHaveLength(1);
    expect(status.recipients[0]).toMatchObject({ agent: 'bot', state: 'returned' });
    expect(status.recipients[0]?.reason).toMatch(/codex was still retrying after 8 s: .*Reconnecting/);
    // The driver keeps running: the message waits for a person, nothing is re-sent on its own.
    expect(d.child.exitCode).toBeNull();
  }, 240_000);
});
