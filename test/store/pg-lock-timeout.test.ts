import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { asStoreFault } from '../../src/core/store-faults.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import {
  type ConformanceHost,
  dropSchema,
  freshSchemaUrl,
  openConformanceHost,
  PG_BASE_URL,
} from '../conformance/backend.js';
import { tempHome } from '../support/host.js';

/**
 * A write blocked by another session's lock (a long `LOCK TABLE`, a stuck migration) fails after
 * PostgreSQL's lock_timeout with the busy line, as SQLite does after its 10 s busy wait; before,
 * it waited as long as the lock was held (and an HTTP request was cut at 60 s with no answer).
 * The lock is held in a schema of the test's own on the shared server: no restart, no other schema.
 */
describe.skipIf(process.env.SLUICE_TEST_PG === 'off')('a PostgreSQL write blocked by a lock', () => {
  let h: ConformanceHost | undefined;
  let holder: pg.Client | undefined;
  afterEach(async () => {
    await holder?.end().catch(() => undefined);
    holder = undefined;
    await h?.close();
    h = undefined;
  });

  it('fails with "the database is busy" after the lock timeout, changes nothing, and succeeds once the lock is released', async () => {
    h = await openConformanceHost('postgres', 'lock_timeout');
    const host = h;
    const schema = new URL(host.db as string).searchParams.get('schema') as string;
    await host.agent('bot');
    await sendMessage(host.ctx, host.owner, { to: 'bot', body: 'before the lock' });
    const stored = async () =>
      Number(
        (
          await host.ctx.store.db
            .selectFrom('messages')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await stored()).toBe(1);

    holder = new pg.Client({ connectionString: PG_BASE_URL, application_name: `${schema}_holder` });
    await holder.connect();
    await holder.query('begin');
    await holder.query(`lock table "${schema}".messages in access exclusive mode`);

    // Bounded: the lock timeout (10 s) and a little, not as long as the lock is held.
    let deadline: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      sendMessage(host.ctx, host.owner, { to: 'bot', body: 'while locked' }).then(
        () => 'sent while the table was locked',
        (err: unknown) => err,
      ),
      new Promise((resolve) => {
        deadline = setTimeout(() => resolve('still waiting on the lock after 30 s'), 30_000);
      }),
    ]);
    clearTimeout(deadline);
    // As every surface shows it (RPC, HTTP, CLI and MCP map a store fault through asStoreFault).
    expect(asStoreFault(outcome)).toMatchObject({
      code: 'unavailable',
      message: 'the database is busy: another session held a lock for 10 s; nothing was changed, try again',
    });

    await holder.query('rollback');
    expect(await stored()).toBe(1);
    await sendMessage(host.ctx, host.owner, { to: 'bot', body: 'after the lock' });
    expect(await stored()).toBe(2);
  }, 90_000);

  it('names the lock timeout in effect, not a fixed 10 s: a URL setting lock_timeout=1500 says 1.5 s, for a read and for batched sends', async () => {
    const target = freshSchemaUrl('lock_timeout_url', { lock_timeout: '1500' });
    const { home, cleanup } = tempHome('sluice-lock-timeout-');
    const ctx = await openHost({ home, db: target.url, durability: 'normal', pollMs: 10 });
    try {
      await initHome(ctx);
      const owner = await resolvePrincipal(ctx, 'owner');
      holder = new pg.Client({ connectionString: PG_BASE_URL, application_name: `${target.schema}_holder` });
      await holder.connect();
      await holder.query('begin');
      await holder.query(`lock table "${target.schema}".messages in access exclusive mode`);
      const failure = (p: Promise<unknown>) =>
        p.then(
          () => 'succeeded while the table was locked',
          (err: unknown) => asStoreFault(err),
        );
      const read = failure(
        ctx.store.db
          .selectFrom('messages')
          .select((eb) => eb.fn.countAll().as('n'))
          .execute(),
      );
      // Several sends waiting together commit as one batch (send-batch.ts): each meets the lock.
      const sends = ['a', 'b', 'c'].map((body) => failure(sendMessage(ctx, owner, { to: 'owner', body })));
      const line =
        'the database is busy: another session held a lock for 1.5 s; nothing was changed, try again';
      for (const outcome of [await read, ...(await Promise.all(sends))])
        expect(outcome).toMatchObject({ code: 'unavailable', message: line });
    } finally {
      await holder?.query('rollback').catch(() => undefined);
      await ctx.store.close();
      cleanup();
      await dropSchema(target.schema);
    }
  }, 90_000);
});
