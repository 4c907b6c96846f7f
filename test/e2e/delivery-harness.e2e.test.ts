// Harness delivery with the REAL Claude Code and Codex clients against the scripted model server:
// hooks installed by `sluice hooks install`, body delivery vs the metadata-only notice, for four
// scenarios. Writes the measured table to test-artifacts/delivery-eval.json, and into
// docs/delivery.md when SLUICE_EVAL_WRITE=1 (npm run eval).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  type Client,
  type Envelope,
  type Mode,
  metricsTable,
  runScenario,
  SCENARIOS,
  type ScenarioMetrics,
  type ScenarioName,
  type ScenarioTrace,
} from '../hooks/delivery-scenarios.js';
import { ensureClients, REPO_ROOT } from './support/clients.js';
import { type ModelServer, startModelServer } from './support/model-server.js';

const enabled = process.env.SLUICE_E2E === '1';
const results: ScenarioMetrics[] = [];

function keep(trace: ScenarioTrace): ScenarioTrace {
  const { client, mode, scenario, turns, requests, toolCalls, requestBytes, wallMs, firstReplyAt } = trace;
  results.push({ client, mode, scenario, turns, requests, toolCalls, requestBytes, wallMs, firstReplyAt });
  return trace;
}

function expectAllHandled(trace: ScenarioTrace): void {
  expect(trace.exitCodes.every((c) => c === 0)).toBe(true);
  expect(trace.pendingAfter.at(-1), `last tool outputs: ${JSON.stringify(trace.lastToolOutputs)}`).toEqual(
    [],
  );
  expect(new Set(trace.archivedIds)).toEqual(new Set(trace.sent.keys()));
  for (const id of trace.sent.keys()) expect(trace.replyBodies).toContain(`Done: handled ${id}`);
}

function expectBodyDelivery(trace: ScenarioTrace, scenario: ScenarioName): void {
  // Turn 1's first request holds exactly one envelope (SessionStart + UserPromptSubmit do not double it).
  const [envelopes] = trace.firstRequestEnvelopes;
  expect(envelopes).toHaveLength(1);
  const envelope = envelopes?.[0] as Envelope;
  if (scenario === 'oversized head') {
    expect(envelope.messages).toEqual([]);
    const head = [...trace.sent.keys()][0];
    expect(envelope.oversizedHead?.id).toBe(head);
    expect(trace.commands[0]?.[0]).toBe(`sluice message read ${head} --json`);
    return;
  }
  // Complete bodies, exact ids, FIFO, and one shell call replying and archiving them all.
  expect(envelope.messages.length).toBeGreaterThan(0);
  const sentIds = [...trace.sent.keys()];
  expect(envelope.messages.map((m) => m.id)).toEqual(sentIds.slice(0, envelope.messages.length));
  for (const m of envelope.messages) expect(m.body).toBe(trace.sent.get(m.id));
  expect(trace.commands[0]).toHaveLength(1);
  expect(trace.commands[0]?.[0]).toMatch(/^sluice message reply .* && sluice message archive /);
  expect(trace.firstReplyAt).toBe(1);
}

describe.skipIf(!enabled)('harness delivery with the real clients', () => {
  let server: ModelServer;
  beforeAll(async () => {
    await ensureClients();
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
    if (results.length === 0) return;
    const dir = join(REPO_ROOT, 'test-artifacts');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'delivery-eval.json'), JSON.stringify(results, null, 2));
    if (process.env.SLUICE_EVAL_WRITE === '1') writeTable(metricsTable(sortRows(results)));
  });

  for (const client of ['claude', 'codex'] as Client[]) {
    for (const scenario of SCENARIOS) {
      test(`${client}, ${scenario}: body delivery lets the model reply and archive from its first request`, async () => {
        const trace = keep(await runScenario(server, client, 'body', scenario));
        expectBodyDelivery(trace, scenario);
        expectAllHandled(trace);
        if (scenario === 'arrival after the slice') {
          // The late message was not in turn 1's slice, stayed pending, and came in turn 2.
          const late = trace.lateId as string;
          expect(trace.pendingAfter[0]).toEqual([late]);
          expect(trace.firstRequestEnvelopes[1]?.[0]?.messages.map((m) => m.id)).toEqual([late]);
        }
        if (scenario === 'burst of 20') {
          // Overflow stays pending and arrives in the next delivery.
          const firstSlice = trace.firstRequestEnvelopes[0]?.[0]?.messages.length ?? 0;
          const why = `last tool outputs: ${JSON.stringify(trace.lastToolOutputs)}`;
          expect(trace.pendingAfter[0], why).toHaveLength(20 - firstSlice);
        }
      }, 300_000);

      test(`${client}, ${scenario}: metadata-only delivery needs an extra inference to list bodies`, async () => {
        const trace = keep(await runScenario(server, client, 'metadata', scenario));
        expect(trace.firstRequestEnvelopes[0]).toEqual([]);
        expect(trace.firstRequestNotice[0]).toBe(true);
        expect(trace.commands[0]?.[0]).toBe('sluice message ls --json --include-body');
        expect(trace.firstReplyAt).toBe(2);
        expectAllHandled(trace);
      }, 300_000);
    }
  }
});

const MODES: Mode[] = ['body', 'metadata'];
function sortRows(rows: readonly ScenarioMetrics[]): ScenarioMetrics[] {
  return [...rows].sort(
    (a, b) =>
      a.client.localeCompare(b.client) ||
      SCENARIOS.indexOf(a.scenario) - SCENARIOS.indexOf(b.scenario) ||
      MODES.indexOf(a.mode) - MODES.indexOf(b.mode),
  );
}

const BEGIN = '<!-- eval:begin (generated by npm run eval; do not edit by hand) -->';
const END = '<!-- eval:end -->';

function writeTable(table: string): void {
  const path = join(REPO_ROOT, 'docs', 'delivery.md');
  const doc = readFileSync(path, 'utf8');
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/delivery.md lacks the ${BEGIN} … ${END} markers`);
  const stamp = `Measured ${new Date().toISOString().slice(0, 16)}Z on ${process.platform}/${process.arch}, node ${process.version}.`;
  writeFileSync(path, `${doc.slice(0, start + BEGIN.length)}\n${stamp}\n\n${table}\n${doc.slice(end)}`);
}
