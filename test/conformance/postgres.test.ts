import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { isSluiceError } from '../../src/core/errors.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { openPostgresStore, parsePostgresUrl } from '../../src/store/postgres/connect.js';
import { postgresMigrations, SchemaTablesIntrospector } from '../../src/store/postgres/migrations.js';
import {
  backoffMs,
  DEFAULT_RETRY,
  isTransientConflict,
  retryTransient,
} from '../../src/store/postgres/retry.js';
import { decodeText, encodeText } from '../../src/store/postgres/text.js';
import { hostileString } from '../core/arbitraries.js';
import { tempHome } from '../support/host.js';
import {
  backendsUnderTest,
  dropSchema,
  expectNoConnections,
  freshSchemaUrl,
  openConnections,
  withAdmin,
} from './backend.js';

const withPostgres = backendsUnderTest().includes('postgres');

describe('PostgreSQL URL settings', () => {
  it('takes pool size and schema from the URL and leaves the rest to pg', () => {
    const s = parsePostgresUrl(
      'postgres://me:secret@db.example:6543/sluice?pool=3&schema=team_a&sslmode=disable',
    );
    expect(s).toMatchObject({ pool: 3, schema: 'team_a', display: 'db.example:6543/sluice' });
    expect(s.connectionString).toBe('postgres://me:secret@db.example:6543/sluice?sslmode=disable');
    expect(parsePostgresUrl('postgresql://localhost/x').pool).toBe(10);
    expect(parsePostgresUrl('postgres://localhost/x?pool=2', { pool: 7 }).pool).toBe(7);
  });

  it.each([
    ['postgres://localhost/x?pool=0', 'pool size'],
    ['postgres://localhost/x?pool=1.5', 'pool size'],
    ['postgres://localhost/x?pool=many', 'pool size'],
    ['postgres://localhost/x?schema=Robert%27);drop', 'schema'],
    ['postgres://localhost/x?schema=', 'schema'],
    ['postgres://[bad', 'not a valid'],
  ])('refuses %s with one clear line', (url, words) => {
    try {
      parsePostgresUrl(url);
      expect.unreachable();
    } catch (err) {
      expect(isSluiceError(err) && err.code === 'invalid_params').toBe(true);
      expect((err as Error).message).toContain(words);
      expect((err as Error).message).not.toContain('\n');
    }
  });
});

describe('transient conflict retries', () => {
  const conflict = (code: string) => Object.assign(new Error(code), { code });
  const instant = { ...DEFAULT_RETRY, sleep: async () => undefined };

  it('re-runs serialization failures and deadlocks, then gives up after the last attempt', async () => {
    let calls = 0;
    const value = await retryTransient(async () => {
      calls++;
      if (calls < 3) throw conflict(calls === 1 ? '40001' : '40P01');
      return 'done';
    }, instant);
    expect([value, calls]).toEqual(['done', 3]);
    calls = 0;
    await expect(
      retryTransient(async () => {
        calls++;
        throw conflict('40P01');
      }, instant),
    ).rejects.toMatchObject({ code: '40P01' });
    expect(calls).toBe(DEFAULT_RETRY.attempts);
  });

  it('never re-runs anything else (constraint violations, user errors)', async () => {
    for (const err of [conflict('23505'), conflict('22021'), new Error('plain')]) {
      let calls = 0;
      await expect(
        retryTransient(async () => {
          calls++;
          throw err;
        }, instant),
      ).rejects.toBe(err);
      expect(calls).toBe(1);
      expect(isTransientConflict(err)).toBe(false);
    }
  });

  it('waits a jittered, growing, capped delay', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (attempt, r) => {
          const ceiling = Math.min(DEFAULT_RETRY.maxMs, DEFAULT_RETRY.baseMs * 2 ** (attempt - 1));
          const delay = backoffMs(attempt, { ...DEFAULT_RETRY, random: () => r });
          expect(delay).toBeGreaterThanOrEqual(ceiling * 0.5);
          expect(delay).toBeLessThan(ceiling * 1.5);
        },
      ),
    );
  });
});

describe('text that PostgreSQL cannot hold', () => {
  it('round-trips any string, never sends U+0000, and keeps distinct strings distinct', () => {
    fc.assert(
      fc.property(hostileString(50), hostileString(50), (a, b) => {
        const ea = encodeText(a);
        expect(ea.includes('\u0000')).toBe(false);
        expect(decodeText(ea)).toBe(a);
        if (a !== b) expect(encodeText(b)).not.toBe(ea);
      }),
      { numRuns: 500 },
    );
    expect(decodeText(encodeText('\u0000\ufdd0\ufdd00\u0000e'))).toBe('\u0000\ufdd0\ufdd00\u0000e');
  });
});

describe.runIf(withPostgres)('PostgreSQL store', () => {
  it('migrates once when four hosts start at the same moment on a fresh schema', async () => {
    const { url, schema } = freshSchemaUrl('migrate');
    try {
      const stores = await Promise.all([1, 2, 3, 4].map(() => openPostgresStore({ url })));
      const migrations = await sql<{ name: string }>`select name from kysely_migration`.execute(
        stores[0]!.db,
      );
      const names = Object.keys(await postgresMigrations.getMigrations()).sort();
      expect(migrations.rows.map((r) => r.name).sort()).toEqual(names);
      // Every store writes and sees the others' writes.
      await Promise.all(
        stores.map((s, i) =>
          s.transaction((trx) =>
            trx
              .insertInto('meta')
              .values({ key: `k${i}`, value: 'v' })
              .execute(),
          ),
        ),
      );
      expect(await stores[3]!.db.selectFrom('meta').select('key').orderBy('key').execute()).toHaveLength(4);
      await Promise.all(stores.map((s) => s.close()));
      await expectNoConnections(schema);
    } finally {
      await dropSchema(schema);
    }
  });

  it('opens while other schemas on the same database are being created and dropped', async () => {
    const mine = freshSchemaUrl('churn');
    let churning = true;
    const churn = (async () => {
      for (let i = 0; churning; i++) {
        const name = `${mine.schema}_x${i}`;
        await withAdmin(async (c) => {
          await c.query(`create schema "${name}"`);
          await c.query(`create table "${name}".t (id serial primary key, v text)`);
          await c.query(`drop schema "${name}" cascade`);
        });
      }
    })();
    try {
      for (let i = 0; i < 4; i++) {
        const store = await openPostgresStore({ url: mine.url });
        const tables = await new SchemaTablesIntrospector(store.db as never).getTables();
        expect(tables.every((t) => t.schema === mine.schema)).toBe(true);
        expect(tables.map((t) => t.name)).toContain('kysely_migration');
        await store.close();
      }
    } finally {
      churning = false;
      await churn;
      await dropSchema(mine.schema);
    }
  });

  it('lets four hosts initialise a fresh database at once: one owner, one cursor secret', async () => {
    const { url, schema } = freshSchemaUrl('init');
    const { home, cleanup } = tempHome('sluice-init-');
    try {
      const hosts = await Promise.all([1, 2, 3, 4].map(() => openHost({ home, db: url })));
      await Promise.all(hosts.map((h) => initHome(h)));
      const owners = await hosts[0]!.store.db
        .selectFrom('principals')
        .select('id')
        .where('name', '=', 'owner')
        .execute();
      expect(owners).toHaveLength(1);
      const secrets = new Set(hosts.map((h) => Buffer.from(h.cursorSecret).toString('hex')));
      expect(secrets.size).toBe(1);
      await Promise.all(hosts.map((h) => h.store.close()));
    } finally {
      cleanup();
      await dropSchema(schema);
    }
  });

  it('never opens more connections than the pool size, and closes them all', async () => {
    const { url, schema } = freshSchemaUrl('pool', { pool: '2' });
    try {
      const store = await openPostgresStore({ url });
      await Promise.all(Array.from({ length: 12 }, () => sql`select pg_sleep(0.05)`.execute(store.db)));
      expect(await openConnections(schema)).toBeLessThanOrEqual(2);
      await store.close();
      await store.close();
      await expectNoConnections(schema);
    } finally {
      await dropSchema(schema);
    }
  });

  it('re-runs a transaction the server broke a deadlock with, and both writers finish', async () => {
    const { url, schema } = freshSchemaUrl('deadlock');
    try {
      const store = await openPostgresStore({ url });
      await store.db
        .insertInto('meta')
        .values([
          { key: 'a', value: '0' },
          { key: 'b', value: '0' },
        ])
        .execute();
      // Bypass the write lock on purpose: two raw transactions that lock a and b in opposite order.
      let attempts = 0;
      let arrived = 0;
      const bothHoldFirstLock = new Promise<void>((resolve) => {
        const check = setInterval(() => {
          if (arrived >= 2) {
            clearInterval(check);
            resolve();
          }
        }, 5);
      });
      const crossing = (first: string, second: string) =>
        retryTransient(() =>
          store.db.transaction().execute(async (trx) => {
            attempts++;
            await trx
              .updateTable('meta')
              .set({ value: sql`value || '+'` })
              .where('key', '=', first)
              .execute();
            if (attempts <= 2) {
              arrived++;
              await bothHoldFirstLock;
            }
            await trx
              .updateTable('meta')
              .set({ value: sql`value || '+'` })
              .where('key', '=', second)
              .execute();
          }),
        );
      await Promise.all([crossing('a', 'b'), crossing('b', 'a')]);
      expect(attempts).toBe(3);
      const rows = await store.db.selectFrom('meta').selectAll().orderBy('key').execute();
      expect(rows.map((r) => r.value)).toEqual(['0++', '0++']);
      await store.close();
    } finally {
      await dropSchema(schema);
    }
  });

  it('keeps watching after its LISTEN connection is killed, and reports the gap', async () => {
    const { url, schema } = freshSchemaUrl('listen');
    try {
      const store = await openPostgresStore({ url });
      const writer = await openPostgresStore({ url });
      let changes = 0;
      const stop = store.watchChanges(() => changes++);
      const listenerPids = async () =>
        withAdmin(async (c) =>
          (
            await c.query<{ pid: number }>(
              `select pid from pg_stat_activity where application_name = $1 and query ilike 'listen%'`,
              [schema],
            )
          ).rows.map((r) => r.pid),
        );
      await expect.poll(listenerPids, { timeout: 5000 }).toHaveLength(1);
      const [pid] = await listenerPids();
      await withAdmin((c) => c.query('select pg_terminate_backend($1)', [pid]));
      // Reconnecting counts as a change (commits in between were not announced).
      await expect.poll(() => changes, { timeout: 5000 }).toBeGreaterThan(0);
      await expect.poll(listenerPids, { timeout: 5000 }).toHaveLength(1);
      changes = 0;
      await writer.transaction((trx) =>
        trx
          .insertInto('events')
          .values({ kind: 'queue.changed', created_at: new Date().toISOString() })
          .execute(),
      );
      await expect.poll(() => changes, { timeout: 5000 }).toBeGreaterThan(0);
      stop();
      await writer.close();
      await store.close();
      await expectNoConnections(schema);
    } finally {
      await dropSchema(schema);
    }
  });

  it('announces nothing for a rolled-back write and ignores other schemas on the same database', async () => {
    const mine = freshSchemaUrl('quiet');
    const theirs = freshSchemaUrl('noisy');
    try {
      const store = await openPostgresStore({ url: mine.url });
      const other = await openPostgresStore({ url: theirs.url });
      let changes = 0;
      const stop = store.watchChanges(() => changes++);
      await new Promise((r) => setTimeout(r, 300));
      await other.transaction((trx) =>
        trx.insertInto('events').values({ kind: 'queue.changed', created_at: 'x' }).execute(),
      );
      await expect(
        store.transaction(async (trx) => {
          await trx.insertInto('events').values({ kind: 'queue.changed', created_at: 'x' }).execute();
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await new Promise((r) => setTimeout(r, 300));
      expect(changes).toBe(0);
      stop();
      await other.close();
      await store.close();
    } finally {
      await dropSchema(mine.schema);
      await dropSchema(theirs.schema);
    }
  });

  it('refuses an unreachable server with one line that names it without credentials', async () => {
    try {
      await openPostgresStore({ url: 'postgres://someone:hunter2@127.0.0.1:1/nowhere' });
      expect.unreachable();
    } catch (err) {
      expect(isSluiceError(err) && err.code === 'unavailable').toBe(true);
      expect((err as Error).message).toContain('127.0.0.1:1/nowhere');
      expect((err as Error).message).not.toContain('hunter2');
    }
  });
});
