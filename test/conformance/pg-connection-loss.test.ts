import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { isSluiceError } from '../../src/core/errors.js';
import { openPostgresStore } from '../../src/store/postgres/connect.js';
import type { Store } from '../../src/store/store.js';
import { backendsUnderTest, dropSchema, freshSchemaUrl, withAdmin } from './backend.js';

/**
 * A connection lost under a request, on the suite's shared server: only this store's own
 * backends are terminated (pg_terminate_backend), never the server. The restart under two real
 * hosts is pg-restart.test.ts, on a cluster of its own.
 */
const withPostgres = backendsUnderTest().includes('postgres');

describe.skipIf(!withPostgres)('a PostgreSQL connection lost under a request', () => {
  let store: Store | undefined;
  let schema: string | undefined;
  afterEach(async () => {
    await store?.close();
    if (schema) await dropSchema(schema);
    store = undefined;
    schema = undefined;
  });

  const open = async () => {
    const target = freshSchemaUrl('connloss');
    schema = target.schema;
    // Named for this test alone: only its own backends are ever terminated.
    store = await openPostgresStore({ url: target.url, pool: 2, applicationName: target.schema });
    await sql`create table probe (n integer)`.execute(store.db);
    return store;
  };

  /** Terminates one of this store's backends and waits until the server has let it go. */
  const terminate = async (pid: number) => {
    await withAdmin(async (c) => {
      await c.query('select pg_terminate_backend($1)', [pid]);
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const r = await c.query('select 1 from pg_stat_activity where pid = $1', [pid]);
        if (r.rowCount === 0) return;
      }
      throw new Error(`backend ${pid} still there after 10 s`);
    });
  };

  it('between two statements of a transaction: the process lives and the transaction runs again, once', async () => {
    // The fault found: a checked-out client whose connection ends while no query runs emits
    // 'error'; with no listener that ended the process (vitest reports it as an uncaught error).
    const s = await open();
    let attempts = 0;
    await s.transaction(async (trx) => {
      attempts++;
      await sql`insert into probe values (${attempts})`.execute(trx);
      if (attempts === 1) {
        const pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]?.pid;
        // The session ends while this transaction sits between statements; the next statement
        // meets the dead connection.
        await terminate(pid as number);
      }
      await sql`insert into probe values (${attempts * 10})`.execute(trx);
    });
    expect(attempts).toBe(2);
    const rows = await sql<{ n: number }>`select n from probe order by n`.execute(s.db);
    expect(rows.rows.map((r) => r.n)).toEqual([2, 20]);
  });

  it('during a statement in its own transaction: one line `unavailable`, outcome unknown, not run again', async () => {
    const s = await open();
    let runs = 0;
    const err = await s
      .sendTransaction(
        async (db) => {
          runs++;
          await sql`select pg_terminate_backend(pg_backend_pid())`.execute(db);
        },
        { oneStatement: true },
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(runs).toBe(1);
    expect(isSluiceError(err) && err.code === 'unavailable').toBe(true);
    expect((err as { data?: unknown }).data).toMatchObject({ reason: 'database', applied: 'unknown' });
    expect((err as Error).message).not.toContain('\n');
    expect((err as Error).message).toMatch(/idempotency key/);
    // The pool replaced the dead connection: the next request is served.
    await sql`insert into probe values (1)`.execute(s.db);
    expect((await sql<{ n: number }>`select count(*) as n from probe`.execute(s.db)).rows[0]?.n).toBe(1);
  });

  it('an idle pooled connection and the LISTEN connection dropping: watchers are told, requests go on', async () => {
    const s = await open();
    let told = 0;
    const unwatch = s.watchChanges(() => {
      told++;
    });
    try {
      // Wait for the LISTEN session, then end every backend of this store (pooled and LISTEN).
      const deadline = Date.now() + 10_000;
      let pids: number[] = [];
      while (Date.now() < deadline) {
        pids = await withAdmin(async (c) => {
          const r = await c.query<{ pid: number; listening: boolean }>(
            "select pid, query ilike 'listen%' as listening from pg_stat_activity where application_name = $1",
            [schema],
          );
          return r.rows.some((row) => row.listening) ? r.rows.map((row) => row.pid) : [];
        });
        if (pids.length > 0) break;
      }
      expect(pids.length).toBeGreaterThan(0);
      const before = told;
      for (const pid of pids) await terminate(pid);
      // The listener reconnects and tells its watchers once (commits made meanwhile were not announced).
      const until = Date.now() + 10_000;
      while (told === before && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(told).toBeGreaterThan(before);
      await sql`insert into probe values (3)`.execute(s.db);
    } finally {
      unwatch();
    }
  });
});
