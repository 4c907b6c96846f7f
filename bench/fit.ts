import { performance } from 'node:perf_hooks';
import { fitBoundedList } from '../src/core/bounded.js';
import { utf8Length, utf16Length } from '../src/core/measure.js';

/** One benchmark line as the bench runner prints it. */
export interface BenchResult {
  name: string;
  ratio: number;
  target: string;
  ok: boolean;
  detail: string;
}

const MESSAGE_COUNT = 100;
const TARGET_RATIO = 2;

/** Deterministic pseudo-random numbers so every run measures the same page. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** ~100 model projections of ordinary chat messages: prose, some emoji and CJK, a few attachments. */
function typicalMessages(count: number): Record<string, unknown>[] {
  const random = lcg(42);
  const words = [
    'deploy',
    'the',
    'build',
    'is',
    'green',
    'review',
    'PR',
    '#412',
    'ok',
    '👍',
    '测试',
    'done',
    '"quoted"',
  ];
  return Array.from({ length: count }, (_, i) => {
    const length = 20 + Math.floor(random() * 120);
    const body = Array.from({ length }, () => words[Math.floor(random() * words.length)]).join(' ');
    return {
      channel_id: `ch_${(i % 7).toString(36).padStart(8, '0')}`,
      message_id: `msg_01J${i.toString(36).padStart(20, '0')}`,
      author: {
        id: `pr_${i % 5}`,
        name: ['owner', 'builder', 'reviewer', 'ops', 'qa'][i % 5],
        kind: 'agent',
      },
      created_at: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString(),
      subject: i % 4 === 0 ? `status ${i}` : undefined,
      body: i % 10 === 0 ? `${body}\n\n\`\`\`\nline 1\nline 2\n\`\`\`` : body,
      attachments:
        i % 9 === 0
          ? [{ attachment_id: `att_${i}`, name: 'screenshot.png', mime: 'image/png', size: 48213 }]
          : [],
      actions: [],
    };
  });
}

let sink = 0;

/** Nanoseconds per call of `fn` over one batch. */
function batchNs(fn: () => unknown, calls: number): number {
  const start = performance.now();
  for (let i = 0; i < calls; i++) sink += sinkOf(fn());
  return ((performance.now() - start) * 1e6) / calls;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Times `subject` against `reference` in interleaved batches and reports medians, including the
 * median of per-batch ratios: on a shared, noisy machine both sides see the same load.
 */
function sideBySide(
  reference: () => unknown,
  subject: () => unknown,
  batches = 31,
  calls = 20,
): { referenceNs: number; subjectNs: number; ratio: number } {
  batchNs(reference, calls * 3);
  batchNs(subject, calls * 3);
  const referenceSamples: number[] = [];
  const subjectSamples: number[] = [];
  const ratios: number[] = [];
  for (let b = 0; b < batches; b++) {
    const r = batchNs(reference, calls);
    const s = batchNs(subject, calls);
    referenceSamples.push(r);
    subjectSamples.push(s);
    ratios.push(s / r);
  }
  return { referenceNs: median(referenceSamples), subjectNs: median(subjectSamples), ratio: median(ratios) };
}

function sinkOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (typeof value === 'number') return value;
  return value === null || value === undefined ? 0 : 1;
}

function micros(ns: number): string {
  return `${(ns / 1000).toFixed(1)} µs`;
}

/**
 * fitBoundedList against one JSON.stringify of the same page object (the floor for any exact page
 * builder), with a naive "re-stringify every prefix" builder for contrast. Ratio = fit / stringify.
 */
export async function benchFit(): Promise<BenchResult[]> {
  const messages = typicalMessages(MESSAGE_COUNT);
  const cursor = 'A'.repeat(86);
  const rest = (count: number) => ({
    nextCursor: count < messages.length ? cursor : null,
    omitted: messages.length - count,
  });
  const fitMessages = (budgets: { utf16?: number; utf8?: number }) =>
    fitBoundedList({
      rows: messages,
      key: 'messages',
      budgets,
      page: (_first, count) => ({ messages: [] as typeof messages, ...rest(count) }),
    });
  const stringifyPage = () => JSON.stringify({ messages, ...rest(messages.length) });
  const pageText = stringifyPage();
  const pageUnits = utf16Length(pageText);
  const pageBytes = utf8Length(pageText);

  const naive = (budgets: { utf16?: number; utf8?: number }) => {
    // What fitting looks like without prefix sums: serialize and measure every candidate page.
    let best = '';
    for (let count = 0; count <= messages.length; count++) {
      const text = JSON.stringify({ messages: messages.slice(0, count), ...rest(count) });
      if (utf16Length(text) > (budgets.utf16 ?? Number.POSITIVE_INFINITY)) break;
      if (budgets.utf8 !== undefined && utf8Length(text) > budgets.utf8) break;
      best = text;
    }
    return best;
  };

  // Budgets the readers really use (DESIGN.md table): MCP pages count UTF-16 units, device pages
  // count UTF-8 bytes, harness deliveries both.
  const scenarios: { name: string; budgets: { utf16?: number; utf8?: number } }[] = [
    { name: 'fitBoundedList utf16, whole page fits exactly', budgets: { utf16: pageUnits } },
    { name: 'fitBoundedList utf16, 12,000-unit MCP budget', budgets: { utf16: 12_000 } },
    { name: 'fitBoundedList utf8, 512 KiB device budget', budgets: { utf8: 512 * 1024 } },
    {
      name: 'fitBoundedList utf8+utf16, 16 KiB / 10,000-unit delivery budget',
      budgets: { utf8: 16_384, utf16: 10_000 },
    },
  ];
  // Worst case, reported in the details rather than gated: a UTF-8 budget equal to the page size
  // forces an exact byte count of every item, which costs about a third of a stringify on its own.
  const worstCase = sideBySide(stringifyPage, () => fitMessages({ utf8: pageBytes }));

  const results: BenchResult[] = [];
  for (const scenario of scenarios) {
    const fitPage = () => fitMessages(scenario.budgets);
    const count = fitPage().end;
    const measured = sideBySide(stringifyPage, () => fitPage().text);
    const naiveRun = sideBySide(stringifyPage, () => naive(scenario.budgets), 5, 2);
    results.push({
      name: scenario.name,
      ratio: Number(measured.ratio.toFixed(2)),
      target: `<= ${TARGET_RATIO}`,
      ok: measured.ratio <= TARGET_RATIO,
      detail:
        `${count}/${messages.length} messages, page ${pageUnits} units / ${pageBytes} bytes; ` +
        `fit ${micros(measured.subjectNs)}, one JSON.stringify ${micros(measured.referenceNs)}, ` +
        `naive re-stringify-every-prefix ${micros(naiveRun.subjectNs)} (${naiveRun.ratio.toFixed(1)}x); ` +
        `worst case (utf8 budget = exact page size) ${worstCase.ratio.toFixed(2)}x`,
    });
  }
  if (sink === -1) console.log('unreachable'); // keeps results observable so nothing is optimised away
  return results;
}
