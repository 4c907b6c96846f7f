// Harness delivery with the REAL Claude Code and Codex clients against the scripted model server:
// hooks installed by `sluice hooks install`, body delivery vs the metadata-only notice. The
// scripted model follows the delivery's instruction (test/e2e/support/drain-eval.ts): it handles
// what it holds with one `sluice message handle` and fetches the next bounded batch in the same
// command, and every reply carries the SHA-256 of the body it received. Each scenario runs turns
// until the inbox is empty; the store then shows every message archived with a reply proving its
// exact body, and nothing archived that no model request held whole.
// `npm test` runs the scenarios marked quick; `npm run eval` (SLUICE_EVAL_WRITE=1) or SLUICE_EVAL=1
// runs them all, and SLUICE_EVAL_WRITE=1 writes the table into docs/delivery.md.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CLAUDE_MAX_BYTES, CODEX_MAX_BYTES } from '../../src/surfaces/cli/bounded-read.js';
import type { Client, Mode } from '../hooks/delivery-scenarios.js';
import { CLAUDE_CODE_VERSION, CODEX_VERSION, ensureClients, REPO_ROOT } from './support/clients.js';
import {
  DRAIN_SCENARIOS,
  type DrainMetrics,
  type DrainScenario,
  type DrainTrace,
  drainBenchRows,
  drainTable,
  headFit,
  proofReply,
  runDrain,
} from './support/drain-eval.js';
import { type ModelServer, startModelServer } from './support/model-server.js';

const enabled = process.env.SLUICE_E2E === '1';
const writing = process.env.SLUICE_EVAL_WRITE === '1';
const everything = writing || process.env.SLUICE_EVAL === '1';
// The default run keeps to about three minutes on a loaded 2-core machine.
const QUICK: readonly DrainScenario[] = ['burst of 40', 'oversized head + 5', '20 of 5 KB'];
const scenarios = everything ? DRAIN_SCENARIOS : QUICK;
// 20 of 5 KB with metadata delivery differs from body delivery only in its first command (`ls`
// instead of handling the envelope); the 20 or so bounded pages after it are the ones the body run
// drains, and cost half this file's time. The default run checks metadata delivery, and body vs
// metadata requests, on the other two; `npm run eval` / SLUICE_EVAL=1 runs every pair.
const withMetadata = (scenario: DrainScenario) => everything || scenario !== '20 of 5 KB';

const results: DrainMetrics[] = [];
const traces = new Map<string, DrainTrace>();

function keep(trace: DrainTrace): DrainTrace {
  const { client, mode, scenario, turns, requests, toolCalls, requestBytes, wallMs, firstReplyAt } = trace;
  results.push({
    client,
    mode,
    scenario,
    turns,
    requests,
    toolCalls,
    requestBytes,
    wallMs,
    firstReplyAt,
    maxToolOutputBytes: trace.maxToolOutputBytes,
  });
  traces.set(`${client}/${scenario}/${mode}`, trace);
  return trace;
}

/** The store after the last turn: every message archived, answered with a proof of its exact body, and seen whole. */
function expectDrainedWithProof(trace: DrainTrace): void {
  if (process.env.SLUICE_EVAL_DEBUG)
    writeFileSync(
      join(
        process.env.SLUICE_EVAL_DEBUG,
        `${trace.client}-${trace.scenario}-${trace.mode}.json`.replace(/ /g, '_'),
      ),
      JSON.stringify({ commands: trace.commands, outputs: trace.toolOutputHeads }, null, 1),
    );
  const why = `commands: ${JSON.stringify(trace.commands).slice(0, 3000)}; last tool outputs: ${JSON.stringify(trace.lastToolOutputs)}`;
  expect(trace.exitCodes.every((c) => c === 0)).toBe(true);
  expect(trace.pendingAfter.at(-1), why).toEqual([]);
  expect(new Set(trace.archivedIds)).toEqual(new Set(trace.sent.keys()));
  for (const [id, body] of trace.sent) expect(trace.replyBodies, why).toContain(proofReply(id, body));
  expect(trace.replyBodies).toHaveLength(trace.sent.size);
  // Nothing archived unseen: some model request held each archived body whole, exactly as sent.
  for (const id of trace.archivedIds) expect(trace.receivedWhole.has(id), `${id} archived unseen`).toBe(true);
  expect(trace.receivedAltered).toEqual([]);
  // No listing or read came back cut by the client's tool-output cap.
  expect(trace.unreadable, why).toBe(0);
  const cap = trace.client === 'codex' ? CODEX_MAX_BYTES : CLAUDE_MAX_BYTES;
  expect(trace.maxToolOutputBytes).toBeLessThanOrEqual(cap + 400);
}

function expectBodyDelivery(trace: DrainTrace): void {
  const first = trace.commands[0]?.[0] ?? '';
  const fit = headFit(trace.client, trace.scenario);
  if (fit !== 'envelope') {
    // Over the hook's cap: the listing fetches it (in parts when larger than a page) and what follows.
    expect(first).toBe('sluice message ls --json --include-body');
    return;
  }
  // Complete bodies, exact ids, FIFO, handled from the first request in one shell call.
  expect(first).toMatch(/^sluice message handle <</);
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
    if (writing) {
      writeTable(drainTable(sortRows(results)));
      writeBenchRows(drainBenchRows(sortRows(results)));
    }
  });

  for (const client of ['claude', 'codex'] as Client[]) {
    for (const scenario of scenarios) {
      test(`${client}, ${scenario}: body delivery drains the inbox, every reply proving the body it read`, async () => {
        const trace = keep(await runDrain(server, client, 'body', scenario));
        expectBodyDelivery(trace);
        expectDrainedWithProof(trace);
      }, 400_000);

      if (!withMetadata(scenario)) continue;

      test(`${client}, ${scenario}: metadata delivery lists the bodies first`, async () => {
        const trace = keep(await runDrain(server, client, 'metadata', scenario));
        expect(trace.commands[0]?.[0]).toBe('sluice message ls --json --include-body');
        expectDrainedWithProof(trace);
      }, 400_000);

      // A message that arrives after the slice was rendered waits for the next turn with body
      // delivery, while the metadata listing runs after it arrived: not comparable by requests.
      if (scenario !== 'arrival after the slice') {
        test(`${client}, ${scenario}: body delivery needs no more model requests than metadata`, () => {
          const body = traces.get(`${client}/${scenario}/body`);
          const metadata = traces.get(`${client}/${scenario}/metadata`);
          if (!body || !metadata) throw new Error('both delivery modes must have run');
          expect(body.requests).toBeLessThanOrEqual(metadata.requests);
          expect(body.turns).toBe(1);
        });
      }
    }
  }
});

const MODES: Mode[] = ['body', 'metadata'];
function sortRows(rows: readonly DrainMetrics[]): DrainMetrics[] {
  return [...rows].sort(
    (a, b) =>
      a.client.localeCompare(b.client) ||
      DRAIN_SCENARIOS.indexOf(a.scenario) - DRAIN_SCENARIOS.indexOf(b.scenario) ||
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
  const stamp = `Measured ${new Date().toISOString().slice(0, 16)}Z on ${process.platform}/${process.arch}, node ${process.version}, Claude Code ${CLAUDE_CODE_VERSION}, Codex ${CODEX_VERSION}.`;
  writeFileSync(path, `${doc.slice(0, start + BEGIN.length)}\n${stamp}\n\n${table}\n${doc.slice(end)}`);
}

const BENCH_BEGIN = '<!-- drain:begin (generated by npm run eval; do not edit by hand) -->';
const BENCH_END = '<!-- drain:end -->';

/** The drain rows of bench/results.md, between their markers (bench/run.ts keeps them). */
function writeBenchRows(rows: string): void {
  const path = join(REPO_ROOT, 'bench', 'results.md');
  const doc = readFileSync(path, 'utf8');
  const start = doc.indexOf(BENCH_BEGIN);
  const end = doc.indexOf(BENCH_END);
  const stamp = `Drain with the real clients (\`npm run eval\`), measured ${new Date().toISOString().slice(0, 16)}Z, Claude Code ${CLAUDE_CODE_VERSION}, Codex ${CODEX_VERSION}: model requests until the inbox is empty, body delivery, against max(⌈n/16⌉, ⌈bytes/page share⌉) + 1 (+1 when the oldest is over the hook's cap, +1 more when it is larger than a page), never more than metadata. Page share: 80 % of the shell-output cap, 24,000 bytes for Claude Code, 8,000 for Codex.`;
  const section = `${BENCH_BEGIN}\n${stamp}\n\n${rows}\n${BENCH_END}`;
  const next =
    start < 0 || end < start
      ? `${doc.trimEnd()}\n\n${section}\n`
      : `${doc.slice(0, start)}${section}${doc.slice(end + BENCH_END.length)}`;
  writeFileSync(path, next);
}
