import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { ensureDmChannel } from '../src/host/channels/channels.js';
import { readQueuePage } from '../src/host/device/queue-page.js';
import { readQueueBody } from '../src/host/device/queue-read.js';
import type { HostContext } from '../src/host/identity/context.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../src/host/identity/principals.js';
import { readMessageStatus } from '../src/host/messages/message-status.js';
import { deliveryFor } from '../src/host/queue/delivery.js';
import { queueSummary } from '../src/host/queue/queue.js';
import { channelRead } from '../src/host/reads/channel-read.js';
import { openPendingReader } from '../src/surfaces/hooks/sqlite-pending.js';
import type { BenchResult } from './result.js';

const TARGET_RATIO = 1.5;

/**
 * Adds `count` waiting person-sourced cards to `agent`'s queue from `author` in one transaction
 * with set-based SQL (a recursive CTE), keeping the queue counters exactly as sends would: fast
 * enough to seed a million cards. Bodies are short; `bodyOf(i)` text is `card <i>`.
 */
export async function seedQueueCards(
  ctx: HostContext,
  agent: Principal,
  author: Principal,
  count: number,
  createdAt = '2026-01-01T00:00:00.000Z',
): Promise<{ channelId: string }> {
  const channel = await ensureDmChannel(ctx, author, agent);
  await ctx.store.transaction(async (trx) => {
    const before = await sql<{ seq: number | null }>`select max(seq) as seq from messages`.execute(trx);
    const firstSeq = Number(before.rows[0]?.seq ?? 0);
    const queue = await sql<{
      next_position: number;
    }>`select next_position from queues where agent_id = ${agent.id}`.execute(trx);
    const nextPosition = Number(queue.rows[0]?.next_position ?? 1);
    const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    await sql`
      with recursive n(i) as (select 1 union all select i + 1 from n where i < ${count})
      insert into messages (id, channel_id, author_id, created_at, body, body_bytes, subject, reply_to, actions, attachments, revision)
      select printf('seed%s%09d', ${tag}, i), ${channel.id}, ${author.id}, ${createdAt}, 'card ' || i, length('card ' || i),
             null, null, '[]', '[]', 1
      from n`.execute(trx);
    await sql`
      insert into inbox (agent_id, position, message_seq, message_id, channel_id, state, source, body_bytes, created_at, updated_at)
      select ${agent.id}, ${nextPosition} + (seq - ${firstSeq} - 1), seq, id, channel_id, 'waiting', 'person', body_bytes, created_at, created_at
      from messages where seq > ${firstSeq} order by seq`.execute(trx);
    await sql`
      update queues set next_position = next_position + ${count}, waiting = waiting + ${count},
        pending_person = pending_person + ${count}, revision = revision + 1
      where agent_id = ${agent.id}`.execute(trx);
    await sql`insert into events (kind, agent_id, created_at) values ('queue.changed', ${agent.id}, ${createdAt})`.execute(
      trx,
    );
  });
  return { channelId: channel.id };
}

/** Median wall time of `runs` calls, in milliseconds. */
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

async function summaryTimeAt(cards: number): Promise<number> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-queue-'));
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    await initHome(ctx);
    const agent = await addPrincipal(ctx, { name: 'helper', kind: 'agent' });
    const owner = await resolvePrincipal(ctx, 'owner');
    await seedQueueCards(ctx, agent, owner, cards);
    await ctx.store.db.executeQuery(sql`analyze`.compile(ctx.store.db));
    const summary = await queueSummary(ctx.store.db, agent);
    if (summary.total !== cards)
      throw new Error(`seeded ${cards} cards but the summary says ${summary.total}`);
    await medianMs(50, () => queueSummary(ctx.store.db, agent));
    return await medianMs(501, () => queueSummary(ctx.store.db, agent));
  } finally {
    await ctx.store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/** Queue summary time at 1,000,000 cards against 1,000 cards: maintained counters keep it flat. */
export async function benchQueue(): Promise<BenchResult[]> {
  const small = await summaryTimeAt(1_000);
  const large = await summaryTimeAt(1_000_000);
  const ratio = large / small;
  return [
    {
      name: 'queue.summary at 1,000,000 cards vs 1,000',
      ratio,
      target: `<= ${TARGET_RATIO}`,
      ok: ratio <= TARGET_RATIO,
      detail: `median ${large.toFixed(3)} ms vs ${small.toFixed(3)} ms over 501 calls each`,
    },
  ];
}

/** The reads of what is pending (and one message's status) that must not grow with history. */
const HISTORY_READS = {
  unreadPage: "channel_read's unread page of 20 (in the host)",
  delivery: "the harness's delivery",
  hookSlice: "the hook's slice (read from the file)",
  queuePage: 'first queue.page',
  queuePageAround: 'queue.page around the newest card',
  queueRead: "queue.read of the newest card's body",
  messageStatus: 'message.status of the oldest message (all the others after it in its channel)',
};
type HistoryRead = keyof typeof HISTORY_READS;

const PENDING_AFTER_HISTORY = 50;
const HISTORY_ROUNDS = 7;
const CALLS_PER_ROUND = 41;

/** A store whose agent has consumed `consumed` messages and has 50 pending, and its reads. */
async function storeAfterHistory(consumed: number): Promise<{
  reads: Record<HistoryRead, () => Promise<unknown>>;
  close(): Promise<void>;
}> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-history-'));
  const ctx = await openHost({ home, durability: 'normal' });
  const closeAll = async () => {
    await ctx.store.close();
    rmSync(home, { recursive: true, force: true });
  };
  try {
    await initHome(ctx);
    const agent = await addPrincipal(ctx, { name: 'helper', kind: 'agent' });
    const owner = await resolvePrincipal(ctx, 'owner');
    await seedQueueCards(ctx, agent, owner, consumed + PENDING_AFTER_HISTORY);
    // The first `consumed` handled, with the counters as the settles would have left them.
    await sql`update inbox set state = 'handled' where agent_id = ${agent.id} and position <= ${consumed}`.execute(
      ctx.store.db,
    );
    await sql`update queues set waiting = ${PENDING_AFTER_HISTORY}, pending_person = ${PENDING_AFTER_HISTORY}
      where agent_id = ${agent.id}`.execute(ctx.store.db);
    // The seeding's WAL copied back now, so no checkpoint runs beside the timed reads.
    await sql`pragma wal_checkpoint(truncate)`.execute(ctx.store.db);
    const reader = openPendingReader(join(home, 'sluice.db'));
    if (!reader) throw new Error('the hook reader does not know this schema');
    // The oldest message: every other one came after it in the same channel.
    const oldest = await sql<{ id: string }>`select id from messages order by seq limit 1`.execute(
      ctx.store.db,
    );
    const oldestId = (oldest.rows[0] as { id: string }).id;
    const newest = await sql<{ id: string }>`select id from messages order by seq desc limit 1`.execute(
      ctx.store.db,
    );
    const newestId = (newest.rows[0] as { id: string }).id;
    const reads: Record<HistoryRead, () => Promise<unknown>> = {
      unreadPage: () => channelRead(ctx, agent, { limit: 20 }),
      delivery: () => deliveryFor(ctx, agent),
      hookSlice: async () => reader.pendingSlice('helper', 20),
      queuePage: () => readQueuePage(ctx, owner, { agent: 'helper' }, 512 * 1024),
      queuePageAround: () => readQueuePage(ctx, owner, { agent: 'helper', around: newestId }, 512 * 1024),
      queueRead: () => readQueueBody(ctx, owner, { agent: 'helper', messageId: newestId }, 512 * 1024),
      messageStatus: () => readMessageStatus(ctx, owner, oldestId),
    };
    const page = await channelRead(ctx, agent, { limit: 20 });
    if (!('messages' in page.value) || page.value.messages.length !== 20)
      throw new Error('the unread page is not 20 messages');
    if (reader.pendingSlice('helper', 20).totalPending !== PENDING_AFTER_HISTORY)
      throw new Error('the hook reader counts a different queue');
    return {
      reads,
      async close() {
        reader.close();
        await closeAll();
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/**
 * Every read of what is pending for an agent that has consumed 100,000 messages against one that
 * has consumed 100, both with 50 pending: the model's unread page, the harness's delivery, the
 * hook's slice and the device's first queue page walk pending entries only, so the history costs
 * nothing. So do the page's lookups of one card by its message id (around it, its body) and the
 * status of the oldest message, whose replies are found by what they answer.
 * Both stores are open at once and take turns, round by round; each ratio is the median of the
 * rounds' ratios.
 */
export async function benchHistory(): Promise<BenchResult[]> {
  const short = await storeAfterHistory(100);
  try {
    const long = await storeAfterHistory(100_000);
    try {
      const rows: BenchResult[] = [];
      for (const key of Object.keys(HISTORY_READS) as HistoryRead[]) {
        await medianMs(30, short.reads[key]);
        await medianMs(30, long.reads[key]);
        const rounds: { short: number; long: number }[] = [];
        for (let r = 0; r < HISTORY_ROUNDS; r++) {
          const shortMs = await medianMs(CALLS_PER_ROUND, short.reads[key]);
          rounds.push({ short: shortMs, long: await medianMs(CALLS_PER_ROUND, long.reads[key]) });
        }
        const ratio = middle(rounds.map((t) => t.long / t.short));
        rows.push({
          name: `${HISTORY_READS[key]} after 100,000 consumed vs 100 (50 pending)`,
          ratio,
          target: `<= ${TARGET_RATIO}`,
          ok: ratio <= TARGET_RATIO,
          detail: `median ${middle(rounds.map((t) => t.long)).toFixed(3)} ms vs ${middle(rounds.map((t) => t.short)).toFixed(3)} ms; ${HISTORY_ROUNDS} alternating rounds of ${CALLS_PER_ROUND} calls each`,
        });
      }
      return rows;
    } finally {
      await long.close();
    }
  } finally {
    await short.close();
  }
}

const middle = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
