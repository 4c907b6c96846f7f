import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { createChannel } from '../src/host/channels/channels.js';
import type { HostContext } from '../src/host/identity/context.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, type Principal } from '../src/host/identity/principals.js';
import { sendMessage } from '../src/host/messages/messages.js';
import { channelRead, type PageResult } from '../src/host/reads/index.js';
import type { BenchResult } from './result.js';

const LATENCY_TARGET = 1.5;
const FILL_TARGET = 0.9;
const PAGE_LIMIT = 20;

/**
 * Seeds `count` messages from `author` into `channelId`, each waiting in `agent`'s inbox, in one
 * transaction of set-based SQL (a recursive CTE) with the queue counters kept as sends keep them:
 * fast enough for a million rows. Bodies are short chat lines.
 */
async function seedChannel(
  ctx: HostContext,
  agent: Principal,
  author: Principal,
  channelId: string,
  count: number,
) {
  await ctx.store.transaction(async (trx) => {
    const before = await sql<{ seq: number | null }>`select max(seq) as seq from messages`.execute(trx);
    const firstSeq = Number(before.rows[0]?.seq ?? 0);
    await sql`
      with recursive n(i) as (select 1 union all select i + 1 from n where i < ${count})
      insert into messages (id, channel_id, author_id, created_at, body, body_bytes, subject, reply_to, actions, attachments, revision)
      select printf('01BENCH%019d', i), ${channelId}, ${author.id}, '2026-01-01T00:00:00.000Z',
             'message ' || i || ': the build on main is green again, can you review PR #' || (i % 997) || ' before the deploy?',
             80, null, null, '[]', '[]', 1
      from n`.execute(trx);
    await sql`
      insert into inbox (agent_id, position, message_seq, message_id, channel_id, state, source, body_bytes, created_at, updated_at)
      select ${agent.id}, seq - ${firstSeq}, seq, id, channel_id, 'waiting', 'person', body_bytes, created_at, created_at
      from messages where seq > ${firstSeq} order by seq`.execute(trx);
    await sql`
      update queues set next_position = ${count + 1}, waiting = ${count}, pending_person = ${count}, revision = revision + 1
      where agent_id = ${agent.id}`.execute(trx);
  });
}

async function medianMs(runs: number, fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

interface Timings {
  unread: number;
  history: number;
  nextPage: number;
}

/** Median latency of an unread page, a history page and a follow-on page (by cursor) at `count` messages. */
async function readTimesAt(count: number): Promise<Timings> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-mcp-'));
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    await initHome(ctx);
    const author = await addPrincipal(ctx, { name: 'writer', kind: 'person' });
    const agent = await addPrincipal(ctx, { name: 'reader', kind: 'agent', managerId: author.id });
    const channel = await createChannel(ctx, author, { name: 'big', members: ['reader'] });
    // The FTS triggers would index every seeded row; search is not measured here.
    await sql`drop trigger messages_fts_insert`.execute(ctx.store.db);
    await seedChannel(ctx, agent, author, channel.id, count);
    await sql`analyze`.execute(ctx.store.db);
    const first = (await channelRead(ctx, agent, { limit: PAGE_LIMIT })).value as PageResult;
    if (first.messages.length !== PAGE_LIMIT)
      throw new Error(`expected a full page, got ${first.messages.length}`);
    const cursor = first.nextCursor as string;
    const unreadRead = () => channelRead(ctx, agent, { limit: PAGE_LIMIT });
    const historyRead = () => channelRead(ctx, agent, { channel_id: channel.id, limit: PAGE_LIMIT });
    const nextRead = () => channelRead(ctx, agent, { limit: PAGE_LIMIT, cursor });
    for (const warm of [unreadRead, historyRead, nextRead]) await medianMs(20, warm);
    return {
      unread: await medianMs(201, unreadRead),
      history: await medianMs(201, historyRead),
      nextPage: await medianMs(201, nextRead),
    };
  } finally {
    await ctx.store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/** Deterministic pseudo-random numbers so every run measures the same pages. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const WORDS = [
  'deploy',
  'the',
  'build',
  'is',
  'green',
  'review',
  'PR',
  'ok',
  '👍',
  '测试',
  'done',
  '"quoted"',
  'tomorrow',
];

/** Returned size / budget over every page the budget cut (pages the count limit cut are not counted). */
async function fillRatios(): Promise<{ min: number; mean: number; pages: number }> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-mcp-fill-'));
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    await initHome(ctx);
    const author = await addPrincipal(ctx, { name: 'writer', kind: 'person' });
    const agent = await addPrincipal(ctx, { name: 'reader', kind: 'agent', managerId: author.id });
    await createChannel(ctx, author, { name: 'chat', members: ['reader'] });
    const random = lcg(7);
    for (let i = 0; i < 1_500; i++) {
      const length = 5 + Math.floor(random() * 120);
      const body = Array.from({ length }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
      await sendMessage(ctx, author, { to: '#chat', body });
    }
    const budget = ctx.limits.toolOutputUnits;
    const fills: number[] = [];
    let cursor: string | undefined;
    do {
      const { text, value } = await channelRead(ctx, agent, { limit: 100, ...(cursor ? { cursor } : {}) });
      const page = value as PageResult;
      // Fill against whichever budget binds: the UTF-16 units or the UTF-8 byte ceiling (docs/mcp.md).
      const bytes = ctx.limits.toolOutputBytes;
      if (page.omitted > 0)
        fills.push(Math.max(text.length / budget, bytes > 0 ? Buffer.byteLength(text) / bytes : 0));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return {
      min: Math.min(...fills),
      mean: fills.reduce((a, b) => a + b, 0) / fills.length,
      pages: fills.length,
    };
  } finally {
    await ctx.store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * `channel_read` latency on a 1,000,000-message channel against a 1,000-message one (keyset reads:
 * cost follows the page, not the history), and how full budget-cut pages of chat messages are.
 */
export async function benchMcp(): Promise<BenchResult[]> {
  const small = await readTimesAt(1_000);
  const large = await readTimesAt(1_000_000);
  const latency = (name: string, key: keyof Timings): BenchResult => {
    const ratio = large[key] / small[key];
    return {
      name: `channel_read ${name} at 1,000,000 messages vs 1,000`,
      ratio,
      target: `<= ${LATENCY_TARGET}`,
      ok: ratio <= LATENCY_TARGET,
      detail: `median ${large[key].toFixed(3)} ms vs ${small[key].toFixed(3)} ms over 201 reads of ${PAGE_LIMIT}`,
    };
  };
  const fill = await fillRatios();
  return [
    latency('unread page (FIFO, all channels)', 'unread'),
    latency('history page (one channel, newest first)', 'history'),
    latency('next unread page by cursor', 'nextPage'),
    {
      name: 'channel_read page fill (returned / budget) on budget-cut pages of chat messages',
      ratio: fill.min,
      target: `>= ${FILL_TARGET}`,
      ok: fill.min >= FILL_TARGET,
      detail: `min ${fill.min.toFixed(3)}, mean ${fill.mean.toFixed(3)} over ${fill.pages} pages (limit 100, budgets 12,000 UTF-16 units and 11,900 UTF-8 bytes)`,
    },
  ];
}
