import fc from 'fast-check';
import type { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../src/store/group-commit.js';
import type { Db } from '../../src/store/store.js';

// Group commit against an in-memory database with transactions and savepoints, driven through its
// public API only (createGroupCommit): random arrivals, members that throw, members that arrive
// while a group commits, and commits or whole transactions that fail on command.

/** What the test's database does with one transaction (scripted per transaction, in order). */
type TransactionFate =
  | { kind: 'ok' }
  | { kind: 'commit-fails' }
  | { kind: 'group-wide' } // the commit fails in a way every member shares (failsEveryMember)
  | { kind: 'aborts-at'; statement: number }; // that statement fails and undoes the transaction

class InjectedFailure extends Error {
  constructor(
    message: string,
    readonly groupWide: boolean,
  ) {
    super(message);
  }
}

interface FakeTrx {
  executeQuery(q: CompiledQuery): Promise<{ rows: [] }>;
  write(effect: number): void;
}

/**
 * One connection: transactions run one at a time (FIFO, as a single SQLite connection does), each
 * on a copy of the committed state; savepoints are marks in that copy. The commit takes a turn of
 * the event loop, so calls arrive while it runs and a premature acknowledgement is seen before it.
 */
function fakeDatabase(fates: readonly TransactionFate[]) {
  const committed: number[] = [];
  let transactions = 0;
  let tail: Promise<unknown> = Promise.resolve();

  const runOne = async <T>(fn: (trx: Db) => Promise<T>): Promise<T> => {
    const fate = fates[transactions++] ?? { kind: 'ok' };
    const working = [...committed];
    const savepoints: number[] = [];
    let statements = 0;
    let aborted: InjectedFailure | undefined;
    const statement = () => {
      if (aborted) throw aborted;
      if (fate.kind === 'aborts-at' && statements++ === fate.statement) {
        aborted = new InjectedFailure('transaction undone', false);
        throw aborted;
      }
    };
    const trx: FakeTrx = {
      async executeQuery(q) {
        statement();
        if (q.sql === 'savepoint sluice_group_member') savepoints.push(working.length);
        else if (q.sql === 'rollback to savepoint sluice_group_member') {
          const mark = savepoints.at(-1);
          if (mark === undefined) throw new Error('rollback to a savepoint that does not exist');
          working.length = mark;
        } else if (q.sql === 'release savepoint sluice_group_member') {
          if (savepoints.pop() === undefined) throw new Error('release of a savepoint that does not exist');
        } else throw new Error(`unexpected statement ${q.sql}`);
        return { rows: [] };
      },
      write(effect) {
        statement();
        working.push(effect);
      },
    };
    const result = await fn(trx as unknown as Db);
    if (aborted) throw aborted;
    if (savepoints.length > 0) throw new Error('commit with a savepoint still open');
    await new Promise((r) => setImmediate(r));
    if (fate.kind === 'commit-fails') throw new InjectedFailure('commit failed', false);
    if (fate.kind === 'group-wide') throw new InjectedFailure('never got the lock', true);
    committed.length = 0;
    committed.push(...working);
    return result;
  };

  const runTransaction = <T>(fn: (trx: Db) => Promise<T>): Promise<T> => {
    const run = tail.then(() => runOne(fn));
    tail = run.catch(() => undefined);
    return run;
  };
  return { runTransaction, committed };
}

interface MemberPlan {
  /** Turns of the event loop before it arrives. */
  arriveAfter: number;
  behaviour: 'ok' | 'throws-before-write' | 'throws-after-write' | 'spawns';
  /** Turns of the event loop it spends inside its transaction. */
  work: number;
}

const memberPlan: fc.Arbitrary<MemberPlan> = fc.record({
  arriveAfter: fc.nat({ max: 6 }),
  behaviour: fc.constantFrom('ok', 'ok', 'throws-before-write', 'throws-after-write', 'spawns'),
  work: fc.nat({ max: 2 }),
});

const fate: fc.Arbitrary<TransactionFate> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'ok' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'commit-fails' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'group-wide' as const }) },
  {
    weight: 1,
    arbitrary: fc.nat({ max: 12 }).map((statement) => ({ kind: 'aborts-at' as const, statement })),
  },
);

const turn = () => new Promise((r) => setImmediate(r));

describe('group commit under random arrivals and failures', () => {
  it('settles every member once, after the commit that holds its effect, in arrival order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(memberPlan, { minLength: 1, maxLength: 24 }),
        fc.array(fate, { maxLength: 30 }),
        fc.integer({ min: 1, max: 8 }),
        fc.boolean(),
        async (plans, fates, maxGroup, sharesGroupFailures) => {
          const db = fakeDatabase(fates);
          const inGroup = createGroupCommit(db.runTransaction, {
            maxGroup,
            ...(sharesGroupFailures
              ? { failsEveryMember: (err: unknown) => err instanceof InjectedFailure && err.groupWide }
              : {}),
          });
          // Member ids are their arrival order (the order inGroup was called).
          const arrivals: { id: number; behaviour: MemberPlan['behaviour'] }[] = [];
          const settlements = new Map<number, { ok: boolean; value?: unknown; reason?: unknown }>();
          const ownErrors = new Map<number, Error>();
          const problems: string[] = [];
          const settled: Promise<unknown>[] = [];

          const arrive = (behaviour: MemberPlan['behaviour'], work: number) => {
            const id = arrivals.length;
            arrivals.push({ id, behaviour });
            let spawned = false;
            const own = new Error(`member ${id} refused`);
            ownErrors.set(id, own);
            const call = inGroup(async (trx) => {
              const t = trx as unknown as FakeTrx;
              if (behaviour === 'throws-before-write') throw own;
              t.write(id);
              for (let i = 0; i < work; i++) await turn();
              if (behaviour === 'spawns' && !spawned) {
                spawned = true; // arrives while this member's group runs and commits
                arrive('ok', 0);
              }
              if (behaviour === 'throws-after-write') throw own;
              return `value ${id}`;
            });
            settled.push(
              call.then(
                (value) => {
                  if (settlements.has(id)) problems.push(`member ${id} settled twice`);
                  settlements.set(id, { ok: true, value });
                  // Acknowledged only once its effect is committed, exactly once.
                  const copies = db.committed.filter((e) => e === id).length;
                  if (copies !== 1) problems.push(`member ${id} resolved with ${copies} committed copies`);
                },
                (reason) => {
                  if (settlements.has(id)) problems.push(`member ${id} settled twice`);
                  settlements.set(id, { ok: false, reason });
                },
              ),
            );
          };

          const byTurn = [...plans].sort((a, b) => a.arriveAfter - b.arriveAfter);
          let now = 0;
          for (const plan of byTurn) {
            for (; now < plan.arriveAfter; now++) await turn();
            arrive(plan.behaviour, plan.work);
          }
          // Every member settles (a promise that never settles times the test out).
          for (let i = 0; i < settled.length; i++) await settled[i];

          expect(problems).toEqual([]);
          expect(settlements.size).toBe(arrivals.length);
          for (const { id, behaviour } of arrivals) {
            const s = settlements.get(id);
            const copies = db.committed.filter((e) => e === id).length;
            if (s?.ok) {
              expect(behaviour === 'ok' || behaviour === 'spawns').toBe(true);
              expect(s.value).toBe(`value ${id}`);
              expect(copies).toBe(1);
            } else {
              // Rejected with its own error or a failure the database injected, and nothing of it stored.
              expect(s?.reason === ownErrors.get(id) || s?.reason instanceof InjectedFailure).toBe(true);
              expect(copies).toBe(0);
            }
          }
          // The committed effects are in arrival order.
          expect(db.committed).toEqual([...db.committed].sort((a, b) => a - b));
        },
      ),
      { numRuns: 300 },
    );
  });
});
