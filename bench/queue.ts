import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { ensureDmChannel } from '../src/host/channels/channels.js';
import type { HostContext } from '../src/host/identity/context.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../src/host/identity/principals.js';
import { queueSummary } from '../src/host/queue/queue.js';
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
