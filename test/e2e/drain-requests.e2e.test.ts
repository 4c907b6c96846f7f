// Issue 26, the two drains measured with the real Claude Code and a scripted model that follows
// Sluice's outputs literally (test/e2e/support/drain-eval.ts): an oldest message over the hook's
// cap but within one listing page took 4 model requests (read it, reply && list, handle, close)
// where metadata delivery took 3; 20 messages of 5 KB took 9 (pages of 60 % of the cap) where
// the cap allows 6. Pages are now sized to the cap less the receipts printed beside them, and
// such a head is fetched with the page behind it.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ensureClients } from './support/clients.js';
import { type DrainTrace, drainTarget, proofReply, runDrain } from './support/drain-eval.js';
import { type ModelServer, startModelServer } from './support/model-server.js';

const enabled = process.env.SLUICE_E2E === '1';

function expectDrained(trace: DrainTrace): void {
  const why = `commands: ${JSON.stringify(trace.commands).slice(0, 3000)}`;
  expect(trace.exitCodes.every((c) => c === 0)).toBe(true);
  expect(trace.pendingAfter.at(-1), why).toEqual([]);
  for (const [id, body] of trace.sent) expect(trace.replyBodies, why).toContain(proofReply(id, body));
  for (const id of trace.archivedIds) expect(trace.receivedWhole.has(id), `${id} archived unseen`).toBe(true);
  expect(trace.receivedAltered).toEqual([]);
  expect(trace.unreadable, why).toBe(0);
  expect(trace.turns).toBe(1);
}

describe.skipIf(!enabled)('draining in as few model requests as the cap allows (real Claude Code)', () => {
  let server: ModelServer;
  beforeAll(async () => {
    await ensureClients();
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });

  test('an oldest message over the hook cap but within a page, and 5 behind it: 3 requests, as with metadata', async () => {
    const trace = await runDrain(server, 'claude', 'body', 'oversized head + 5');
    expectDrained(trace);
    // The envelope names the listing, whose one page holds the head and all 5 behind it.
    expect(trace.commands[0]?.[0]).toBe('sluice message ls --json --include-body');
    expect(trace.requests).toBe(3);
    expect(drainTarget('claude', 'oversized head + 5')).toBe(3);
  }, 300_000);

  test('20 messages of 5 KB: at most 6 requests (100 KB cannot pass a 30,000-byte cap in fewer)', async () => {
    const trace = await runDrain(server, 'claude', 'body', '20 of 5 KB');
    expectDrained(trace);
    expect(drainTarget('claude', '20 of 5 KB')).toBe(6);
    expect(trace.requests).toBeLessThanOrEqual(6);
    expect(trace.maxToolOutputBytes).toBeLessThanOrEqual(30_000);
  }, 300_000);
});
