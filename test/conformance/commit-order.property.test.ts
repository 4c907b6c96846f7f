import fc from 'fast-check';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { lastEventSeq, listEventsAfter } from '../../src/store/ops/events.js';
import { eventsHeldBack } from '../../src/store/postgres/commit-order.js';
import { WRITE_LOCK_CLASS } from '../../src/store/postgres/migrations.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost, PG_BASE_URL } from './backend.js';

// The commit-order event reader (src/store/postgres/commit-order.ts) under random interleavings:
// writer transactions on connections of their own (begin, the schema's shared write lock, maybe a
// first write that takes an xid early, k events, commit or rollback) and sends through the store,
// stepped in a random order, with a live reader polling from its cursor between any two steps.
// The reader never skips an event that commits later, never sees one twice, never sees a
// rolled-back one, and in the end has seen every committed event.

/**
 * One slot of the schedule: the next step of one of the writers still running (`pick` among
 * them), then maybe a read of `read` events from the cursor, and maybe a send through the store
 * (started, not awaited) or a wait for the sends under way.
 */
interface Slot {
  pick: number;
  read: number | undefined;
  send: 'none' | 'start' | 'settle';
}

interface WriterPlan {
  /** Writes a row that is no event first, so its xid is taken before its events' seqs. */
  earlyXid: boolean;
  events: number;
  commits: boolean;
}

const writerPlan: fc.Arbitrary<WriterPlan> = fc.record({
  earlyXid: fc.boolean(),
  events: fc.integer({ min: 1, max: 3 }),
  commits: fc.oneof(
    { weight: 3, arbitrary: fc.constant(true) },
    { weight: 1, arbitrary: fc.constant(false) },
  ),
});

const slot: fc.Arbitrary<Slot> = fc.record({
  pick: fc.nat({ max: 11 }),
  read: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined, freq: 2 }),
  send: fc.oneof(
    { weight: 8, arbitrary: fc.constant('none' as const) },
    { weight: 1, arbitrary: fc.constant('start' as const) },
    { weight: 1, arbitrary: fc.constant('settle' as const) },
  ),
});

/** Most steps four writers can take: begin and lock, an early write, three events, the end. */
const MAX_STEPS = 4 * 6;

interface Writer {
  client: pg.Client;
  plan: WriterPlan;
  /** The steps it has taken: begin+lock, the early write, each event, then the end. */
  done: number;
  seqs: number[];
  ended: boolean;
}

describe.runIf(backendsUnderTest().includes('postgres'))('commit-order reader on postgres', () => {
  // One schema for every case: each case starts after the events already there (the reader's
  // cursor is the last of them in commit order) and ends with every transaction of its own
  // settled, so a fresh schema per case (migrations, then a drop) only added time.
  let h: ConformanceHost;
  let bot: Principal;
  let run = 0;
  beforeAll(async () => {
    h = await openConformanceHost('postgres', 'orderprop');
    bot = await h.agent('bot');
    await sendMessage(h.ctx, h.owner, { to: bot.name, body: 'the DM exists' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('never skips, repeats or shows a rolled-back event, and sees every committed one', {
    timeout: 300_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(writerPlan, { minLength: 2, maxLength: 4 }),
        fc.array(slot, { minLength: MAX_STEPS, maxLength: MAX_STEPS }),
        async (plans, schedule) => {
          run += 1;
          const writers: Writer[] = [];
          const sends: Promise<unknown>[] = [];
          try {
            const db = h.ctx.store.db;
            const schema = new URL(h.db as string).searchParams.get('schema') as string;
            for (const plan of plans) {
              const client = new pg.Client({
                connectionString: PG_BASE_URL,
                options: `-c search_path=${schema}`,
              });
              writers.push({ client, plan, done: 0, seqs: [], ended: false });
              await client.connect();
            }
            // The events earlier cases left, all final; the last of them in commit order (xid, then
            // seq) is where a reader starting now begins.
            const earlier = await sql<{ seq: string }>`select seq from events order by xid, seq`.execute(db);
            const earlierSeqs = new Set(earlier.rows.map((e) => Number(e.seq)));
            const baseline = Number(earlier.rows.at(-1)?.seq ?? 0);
            let cursor = await lastEventSeq(db);
            expect(cursor).toBe(baseline);
            const seen: number[] = [];
            const rolledBack = new Set<number>();
            const committed = new Set<number>();

            const read = async (limit: number) => {
              const before = new Set(committed);
              const events = await listEventsAfter(db, cursor, limit);
              expect(events.length).toBeLessThanOrEqual(limit);
              for (const e of events) {
                const seq = Number(e.seq);
                // (c) never a rolled-back event; (b) never one twice.
                expect(rolledBack.has(seq)).toBe(false);
                expect(seen).not.toContain(seq);
                // A test writer's event is shown only once it committed (before this read began).
                if (writers.some((w) => w.seqs.includes(seq))) expect(before.has(seq)).toBe(true);
                seen.push(seq);
              }
              const last = events.at(-1);
              if (last) cursor = Number(last.seq);
            };

            const advance = async (w: Writer, index: number) => {
              const { client, plan } = w;
              const total = 1 + (plan.earlyXid ? 1 : 0) + plan.events + 1;
              if (w.done >= total) return;
              const at = w.done++;
              if (at === 0) {
                // As every Sluice write does: the schema's write lock (shared, like a send) first.
                await client.query('begin');
                await client.query('select pg_advisory_xact_lock_shared($1, hashtext(current_schema()))', [
                  WRITE_LOCK_CLASS,
                ]);
              } else if (at === 1 && plan.earlyXid) {
                await client.query('insert into meta (key, value) values ($1, $2)', [
                  `w${run}.${index}`,
                  'x',
                ]);
              } else if (at < total - 1) {
                const r = await client.query<{ seq: string }>(
                  `insert into events (kind, created_at) values ($1, '2030-01-01T00:00:00Z') returning seq`,
                  [`w${index}`],
                );
                w.seqs.push(Number(r.rows[0]?.seq));
              } else {
                await client.query(plan.commits ? 'commit' : 'rollback');
                w.ended = true;
                for (const seq of w.seqs) (plan.commits ? committed : rolledBack).add(seq);
              }
            };

            let sent = 0;
            for (const s of schedule) {
              const running = writers.filter((w) => !w.ended);
              const w = running[s.pick % Math.max(1, running.length)];
              if (w) await advance(w, writers.indexOf(w));
              if (s.read !== undefined) await read(s.read);
              if (s.send === 'start')
                sends.push(sendMessage(h.ctx, h.owner, { to: bot.name, body: `send ${sent++}` }));
              else if (s.send === 'settle') await Promise.all(sends);
            }
            expect(writers.every((w) => w.ended)).toBe(true);
            await Promise.all(sends);

            // (d) Eventually every committed event, each once; (a) so none was skipped.
            const all = (await db.selectFrom('events').select('seq').orderBy('seq').execute())
              .map((e) => Number(e.seq))
              .filter((seq) => !earlierSeqs.has(seq));
            for (const seq of committed) expect(all).toContain(seq);
            for (const seq of rolledBack) expect(all).not.toContain(seq);
            // The reader reads until it finds nothing more and nothing held back: caught up by its own
            // account. (Held back after every writer ended: another test's transaction can hold a read
            // back for a moment, see commit-order.test.ts; polled, with a deadline.)
            const deadline = Date.now() + 10_000;
            for (;;) {
              const had = seen.length;
              await read(4);
              if (seen.length > had) continue;
              if (!(await eventsHeldBack(db)) || Date.now() > deadline) break;
              await new Promise((r) => setTimeout(r, 10));
            }
            expect([...seen].sort((a, b) => a - b)).toEqual(all);
            expect(await listEventsAfter(db, cursor, 100)).toEqual([]);
          } finally {
            for (const w of writers) {
              if (!w.ended) await w.client.query('rollback').catch(() => undefined);
              await w.client.end().catch(() => undefined);
            }
            await Promise.allSettled(sends);
          }
        },
      ),
      // A failure shrinks for at most four minutes.
      { numRuns: 25, interruptAfterTimeLimit: 240_000 },
    );
  });
});
