import { EventEmitter } from 'node:events';
import fc from 'fast-check';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isConnectionLoss } from '../../src/core/connection-loss.js';
import { SluiceError } from '../../src/core/errors.js';
import {
  databaseUnavailable,
  isNotApplied,
  retryNotApplied,
  weatherProofPool,
} from '../../src/store/postgres/weather.js';

const lost = () => new Error('Connection terminated unexpectedly');

/** A `pg` client stand-in: each query answers with the next scripted outcome. */
class FakeClient extends EventEmitter {
  released: unknown[] = [];
  ran: string[] = [];
  constructor(private readonly script: ((sql: string) => unknown)[]) {
    super();
  }
  async query(sql: string) {
    this.ran.push(sql);
    const next = this.script.shift();
    const outcome = next ? next(sql) : { rows: [] };
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }
  release(destroy?: boolean) {
    this.released.push(destroy);
  }
}

function fakePool(clients: (FakeClient | Error)[]) {
  const pool = new EventEmitter() as EventEmitter & { connect(): Promise<FakeClient>; end(): Promise<void> };
  pool.connect = async () => {
    const next = clients.shift();
    if (!next) throw new Error('no more clients');
    if (next instanceof Error) throw next;
    return next;
  };
  pool.end = async () => undefined;
  return pool as unknown as pg.Pool;
}

describe('PostgreSQL weather (a lost server or connection)', () => {
  it('knows a lost connection from a wrong request', () => {
    expect(isConnectionLoss(lost())).toBe(true);
    expect(
      isConnectionLoss(new Error('Client has encountered a connection error and is not queryable')),
    ).toBe(true);
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '57P03', '08006', '53300'])
      expect(isConnectionLoss(Object.assign(new Error('x'), { code })), code).toBe(true);
    for (const code of ['23505', '40001', '42P01', 'P0001'])
      expect(isConnectionLoss(Object.assign(new Error('x'), { code })), code).toBe(false);
    expect(isConnectionLoss(new SluiceError('unavailable', 'Connection terminated'))).toBe(false);
  });

  it('a checked-out client that loses its connection between statements does not throw; the next statement fails unavailable (nothing applied), the rollback is local, the client discarded', async () => {
    const client = new FakeClient([() => ({ rows: [] }), () => ({ rows: [] })]);
    const pool = weatherProofPool(fakePool([client]), 'db:5432/x');
    const c = await pool.connect();
    await c.query('start transaction isolation level read committed', []);
    await c.query('insert into t values (1)', []);
    // With no listener this emit would throw (the crash that ended every host).
    expect(() => client.emit('error', lost())).not.toThrow();
    const err = await c.query('insert into t values (2)', []).catch((e: unknown) => e);
    expect(isNotApplied(err)).toBe(true);
    expect((err as Error).message).toMatch(/^cannot reach PostgreSQL at db:5432\/x \(Connection terminated/);
    await expect(c.query('rollback', [])).resolves.toMatchObject({ rows: [] });
    expect(client.ran).toEqual([
      'start transaction isolation level read committed',
      'insert into t values (1)',
    ]);
    c.release();
    expect(client.released).toEqual([true]);
    expect(client.listenerCount('error')).toBe(0);
  });

  it('a connection lost during the commit, or during a statement on its own, leaves the outcome unknown', async () => {
    const inTx = new FakeClient([() => ({ rows: [] }), () => lost()]);
    const pool = weatherProofPool(fakePool([inTx, new FakeClient([() => lost()])]), 'db');
    const c = await pool.connect();
    await c.query('begin', []);
    const atCommit = await c.query('commit', []).catch((e: unknown) => e);
    expect(atCommit).toBeInstanceOf(SluiceError);
    expect((atCommit as SluiceError).data).toMatchObject({ reason: 'database', applied: 'unknown' });
    const alone = await (await pool.connect())
      .query('select sluice_send($1)', ['x'])
      .catch((e: unknown) => e);
    expect((alone as SluiceError).data).toMatchObject({ applied: 'unknown' });
    expect(isNotApplied(alone)).toBe(false);
  });

  it('getting a connection is retried while the server refuses, then served', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const starting = Object.assign(new Error('the database system is starting up'), { code: '57P03' });
    const client = new FakeClient([]);
    const pool = weatherProofPool(fakePool([refused, starting, client]), 'db');
    await expect(pool.connect()).resolves.toBeDefined();
    expect(client.listenerCount('error')).toBe(1);
  });

  it('a pool whose every connection stayed busy says so, not that the server cannot be reached, and is not retried', async () => {
    const busy = new Error('timeout exceeded when trying to connect');
    const pool = fakePool([busy, new FakeClient([])]);
    (pool as unknown as { options: object }).options = { max: 10, connectionTimeoutMillis: 30_000 };
    const err = await weatherProofPool(pool, 'db:5432/x')
      .connect()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe('unavailable');
    expect((err as SluiceError).message).toBe(
      'all 10 connections to PostgreSQL at db:5432/x were busy for 30 s; nothing was changed, try again',
    );
    expect(isNotApplied(err)).toBe(false);
  });

  it('a wrong request is not weather: its own error, unchanged', async () => {
    const wrong = Object.assign(new Error('duplicate key'), { code: '23505' });
    const pool = weatherProofPool(fakePool([new FakeClient([() => wrong])]), 'db');
    await expect((await pool.connect()).query('insert', [])).rejects.toBe(wrong);
  });

  it('retryNotApplied runs again only what applied nothing, and gives up within its budget', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('no', 'unknown', 'other', 'ok'), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 400 }),
        async (outcomes, budgetMs) => {
          let clock = 0;
          let runs = 0;
          const policy = { budgetMs, baseMs: 20, maxMs: 100 };
          const run = async () => {
            const outcome = outcomes[Math.min(runs++, outcomes.length - 1)];
            if (outcome === 'ok') return 'done';
            if (outcome === 'other') throw new Error('a bug');
            throw databaseUnavailable('db', lost(), outcome as 'no' | 'unknown');
          };
          const realNow = Date.now;
          Date.now = () => clock;
          try {
            const result = await retryNotApplied(run, policy, async (ms) => {
              clock += ms;
            }).catch((e: unknown) => e);
            const last = outcomes[Math.min(runs - 1, outcomes.length - 1)];
            // It stopped on success, on anything but "nothing applied", or when the budget ran out.
            if (result === 'done') expect(last).toBe('ok');
            else if (!isNotApplied(result)) expect(last === 'unknown' || last === 'other').toBe(true);
            expect(clock).toBeLessThanOrEqual(budgetMs);
            // Every run before the last one failed with nothing applied.
            for (let i = 0; i < runs - 1; i++) expect(outcomes[Math.min(i, outcomes.length - 1)]).toBe('no');
          } finally {
            Date.now = realNow;
          }
        },
      ),
    );
  });
});
