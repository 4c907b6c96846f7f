import type { CompiledQuery } from 'kysely';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage, sendToChannel } from '../../src/host/messages/messages.js';
import { createGroupCommit } from '../../src/store/group-commit.js';
import type { Db } from '../../src/store/store.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from './backend.js';

/** A transaction runner that records what ran: each call is one transaction, `sql` its statements. */
function fakeTransactions(options: { failFirst?: boolean } = {}) {
  const transactions: string[][] = [];
  let failNext = options.failFirst ?? false;
  const run = async <T>(fn: (trx: Db) => Promise<T>): Promise<T> => {
    const sql: string[] = [];
    transactions.push(sql);
    const trx = {
      executeQuery: async (q: CompiledQuery) => {
        sql.push(q.sql);
        return { rows: [] };
      },
      note: (text: string) => sql.push(text),
    } as unknown as Db;
    const result = await fn(trx);
    if (failNext) {
      failNext = false;
      throw new Error('commit failed');
    }
    return result;
  };
  return { run, transactions };
}

const note = (trx: Db, text: string) => (trx as unknown as { note: (t: string) => void }).note(text);

describe('group commit', () => {
  it('runs calls that arrive together in one transaction, each resolved with its own result', async () => {
    const fake = fakeTransactions();
    const inGroup = createGroupCommit(fake.run);
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((n) =>
        inGroup(async (trx) => {
          note(trx, `work ${n}`);
          return n * 10;
        }),
      ),
    );
    expect(results).toEqual([10, 20, 30, 40, 50]);
    expect(fake.transactions).toHaveLength(1);
    expect(fake.transactions[0]?.filter((s) => s.startsWith('work'))).toHaveLength(5);
    expect(fake.transactions[0]?.filter((s) => s.startsWith('savepoint'))).toHaveLength(5);
  });

  it('runs a lone call in a transaction of its own at once, without savepoints', async () => {
    const fake = fakeTransactions();
    const inGroup = createGroupCommit(fake.run);
    const result = await inGroup(async (trx) => {
      note(trx, 'alone');
      return 'ok';
    });
    expect(result).toBe('ok');
    expect(fake.transactions).toEqual([['alone']]);
  });

  it('rolls a failing member back to its savepoint and rejects it alone; the others of its group commit', async () => {
    const fake = fakeTransactions();
    const inGroup = createGroupCommit(fake.run);
    const outcomes = await Promise.allSettled(
      ['a', 'bad', 'c'].map((name) =>
        inGroup(async (trx) => {
          note(trx, `write ${name}`);
          if (name === 'bad') throw new Error('refused');
          return name;
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason.message).toBe('refused');
    expect(fake.transactions).toHaveLength(1);
    const sql = fake.transactions[0] ?? [];
    expect(sql.slice(sql.indexOf('write bad'))).toEqual([
      'write bad',
      'rollback to savepoint sluice_group_member',
      'release savepoint sluice_group_member',
      'savepoint sluice_group_member',
      'write c',
      'release savepoint sluice_group_member',
    ]);
  });

  it('runs each member again alone when the group transaction fails as a whole', async () => {
    const fake = fakeTransactions({ failFirst: true });
    const inGroup = createGroupCommit(fake.run);
    const attempts = new Map<string, number>();
    const results = await Promise.all(
      ['x', 'y', 'z'].map((v) =>
        inGroup(async () => {
          attempts.set(v, (attempts.get(v) ?? 0) + 1);
          return `${v}${attempts.get(v)}`;
        }),
      ),
    );
    // Nothing was acknowledged from the group that did not commit: each result is its second run's.
    expect(results).toEqual(['x2', 'y2', 'z2']);
    expect(fake.transactions).toHaveLength(4);
  });

  it('groups the calls that arrive while a group commits into the next one', async () => {
    const fake = fakeTransactions();
    const inGroup = createGroupCommit(fake.run);
    const late: Promise<string>[] = [];
    const first = inGroup(async () => {
      // Arrive mid-commit: they wait for this group, then commit together.
      for (const v of ['p', 'q', 'r']) late.push(inGroup(async () => v));
      return 'first';
    });
    expect(await first).toBe('first');
    expect(await Promise.all(late)).toEqual(['p', 'q', 'r']);
    expect(fake.transactions).toHaveLength(2);
  });
});

describe.each(backendsUnderTest())('concurrent sends on %s', (backend) => {
  let h: ConformanceHost;
  let bot: Principal;
  let bot2: Principal;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'group');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
    bot = await h.agent('bot');
    bot2 = await h.agent('bot2');
    await createChannel(h.ctx, h.owner, { name: 'team', members: ['bot', 'bot2'] });
  });
  afterEach(async () => {
    await h.close();
  });

  it('stores every concurrent send once, and a refused one among them stores nothing and fails alone', async () => {
    const outsider = await h.person('outsider');
    const closed = await createChannel(h.ctx, h.owner, { name: 'closed', members: ['bot'] });
    const before = await h.ctx.store.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 6 }, (_, i) =>
        sendMessage(h.ctx, h.owner, { to: '#team', body: `hello ${i}` }),
      ),
      // Not a member: refused inside the send's transaction, in the middle of the group.
      sendToChannel(h.ctx, outsider, closed, { body: 'let me in' }),
      ...Array.from({ length: 3 }, (_, i) =>
        sendMessage(h.ctx, h.owner, { to: '#team', body: `later ${i}` }),
      ),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      ...Array(6).fill('fulfilled'),
      'rejected',
      ...Array(3).fill('fulfilled'),
    ]);
    expect((outcomes[6] as PromiseRejectedResult).reason.code).toBe('not_member');
    const messages = await h.ctx.store.db.selectFrom('messages').select(['id', 'body']).execute();
    expect(messages.some((m) => m.body === 'let me in')).toBe(false);
    for (const agent of [bot, bot2]) {
      const entries = await h.ctx.store.db
        .selectFrom('inbox')
        .select('position')
        .where('agent_id', '=', agent.id)
        .orderBy('position')
        .execute();
      expect(entries.map((e) => Number(e.position))).toEqual(Array.from({ length: 9 }, (_, i) => i + 1));
      const queue = await h.ctx.store.db
        .selectFrom('queues')
        .selectAll()
        .where('agent_id', '=', agent.id)
        .executeTakeFirstOrThrow();
      expect([Number(queue.waiting), Number(queue.pending_person), Number(queue.next_position)]).toEqual([
        9, 9, 10,
      ]);
    }
    const after = await h.ctx.store.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    // Per send: one queue.changed per agent and one message.created.
    expect(Number(after.n) - Number(before.n)).toBe(9 * 3);
  });
});
