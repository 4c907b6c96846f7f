// The driver loop when its database goes away (field bug: `sluice drive` exited when PostgreSQL
// restarted under traffic). The loop runs on a store that fails every statement with a chosen
// error while the test says so (the shapes PostgreSQL and the network really throw); the test's
// own handle on the same database stays healthy to send and to look. The real restart, with the
// real Claude Code client and a cluster of the test's own: test/e2e/drive-pg-restart.e2e.test.ts.
import type { KyselyPlugin } from 'kysely';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { claimDriver, DRIVER_LEASE_MS, holdDriver } from '../../src/host/agents/driver-lock.js';
import type { HostContext } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import type { TurnOutcome, TurnReport } from '../../src/host/turns/index.js';
import type { Store } from '../../src/store/store.js';
import { type DriverClient, runDriverLoop, type TurnRequest } from '../../src/surfaces/drivers/loop.js';
import type { OutageEvent } from '../../src/surfaces/drivers/outage.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { eventually } from './drive-harness.js';

/**
 * While `fault.current` is set, every statement and transaction of the store fails with it; with
 * `fault.afterCommit` set, the next transaction commits and then fails with it (the answer to a
 * commit lost on its way back: the outcome is unknown to the caller).
 */
function flakyStore(store: Store, fault: { current: unknown; afterCommit?: unknown }): Store {
  const check = () => {
    if (fault.current !== undefined) throw fault.current;
  };
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      check();
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  return {
    ...store,
    db: store.db.withPlugin(plugin),
    transaction: async (fn) => {
      check();
      const result = await store.transaction(fn);
      const lost = fault.afterCommit;
      fault.afterCommit = undefined;
      if (lost !== undefined) throw lost;
      return result;
    },
    sendTransaction: async (fn, options) => {
      check();
      return store.sendTransaction(fn, options);
    },
    readSnapshot: async (fn) => {
      check();
      return store.readSnapshot(fn);
    },
  };
}

function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, severity: 'FATAL' });
}

function socketError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, syscall: 'connect' });
}

/** A client whose turns end when the test says so (with an outcome, or by failing). */
class ScriptedClient implements DriverClient {
  readonly name = 'fake';
  readonly sessionKey = 'fake:1';
  readonly requests: TurnRequest[] = [];
  #finishers: ((o: TurnOutcome | Error) => void)[] = [];
  readonly gone = new Promise<string>(() => {});

  runTurn(request: TurnRequest): Promise<TurnOutcome> {
    this.requests.push(request);
    return new Promise((resolve, reject) => {
      this.#finishers.push((o) => (o instanceof Error ? reject(o) : resolve(o)));
    });
  }
  finish(outcome: TurnOutcome | Error): void {
    this.#finishers.shift()?.(outcome);
  }
  async stop(): Promise<void> {}
  ids(i: number): string[] {
    return this.requests[i]?.delivered.map((m) => m.id) ?? [];
  }
}

describe('the driver loop through a database outage', () => {
  let h: TestHost;
  let bot: Principal;
  let client: ScriptedClient;
  let stop: AbortController;
  let loop: Promise<void>;
  let settledLoop: { outcome?: 'resolved' | 'rejected'; error?: unknown };
  const fault: { current: unknown; afterCommit?: unknown } = { current: undefined };
  const reports: TurnReport[] = [];
  const events: OutageEvent[] = [];

  beforeEach(async () => {
    h = await openTestHost();
    bot = await h.agent('bot', 'turn');
    client = new ScriptedClient();
    stop = new AbortController();
    fault.current = undefined;
    fault.afterCommit = undefined;
    reports.length = 0;
    events.length = 0;
    settledLoop = {};
  });
  afterEach(async () => {
    fault.current = undefined;
    stop.abort();
    await loop?.catch(() => {});
    await h.close();
  });

  const start = () => {
    const ctx: HostContext = { ...h.ctx, store: flakyStore(h.ctx.store, fault) };
    loop = runDriverLoop(ctx, bot, client, {
      signal: stop.signal,
      retryDelayMs: 1,
      outageBackoffMs: () => 2,
      onTurn: (r) => reports.push(r),
      onOutage: (e) => events.push(e),
    });
    loop.then(
      () => {
        settledLoop = { outcome: 'resolved' };
      },
      (error: unknown) => {
        settledLoop = { outcome: 'rejected', error };
      },
    );
  };
  const send = async (body: string) => (await sendMessage(h.ctx, h.owner, { to: 'bot', body })).message_id;
  const states = async () =>
    (
      await h.ctx.store.db
        .selectFrom('inbox')
        .select(['message_id', 'state'])
        .where('agent_id', '=', bot.id)
        .orderBy('position')
        .execute()
    ).map((r) => [r.message_id, r.state]);
  const failures = () => events.filter((e) => e.phase === 'unavailable').length;
  const until = <T>(what: string, check: () => T | undefined | Promise<T | undefined>) =>
    eventually(
      async () => {
        if (settledLoop.outcome !== undefined)
          throw new Error(
            `the loop ended (${settledLoop.outcome}: ${String(settledLoop.error)}) before ${what}`,
          );
        return check();
      },
      10_000,
      what,
    );

  test('a turn the client ended while the database is down settles once it is back: handled once, delivered once', async () => {
    start();
    const m1 = await send('one');
    await until('the first turn', () => (client.requests.length === 1 ? true : undefined));
    // The server goes away (administrator shutdown) just before the client ends its turn.
    fault.current = pgError('57P01', 'terminating connection due to administrator command');
    client.finish({ ok: true });
    await until('three failed attempts to settle', () => (failures() >= 3 ? true : undefined));
    expect(reports).toEqual([]);
    // Starting up, then back.
    fault.current = pgError('57P03', 'the database system is starting up');
    const before = failures();
    await until('a failure while it starts up', () => (failures() > before ? true : undefined));
    fault.current = undefined;
    await until('the turn settled', () => (reports.length === 1 ? true : undefined));
    expect(reports[0]).toMatchObject({ outcome: 'ok', delivered: [m1], handled: [m1] });
    expect(events.at(-1)?.phase).toBe('back');
    expect(events.filter((e) => e.phase === 'unavailable').map((e) => e.attempt)).toEqual(
      Array.from({ length: failures() }, (_, i) => i + 1),
    );
    expect(await states()).toEqual([[m1, 'handled']]);
    expect(client.requests).toHaveLength(1);
    expect(settledLoop.outcome).toBeUndefined();
  });

  test('a settle whose commit answer was lost is found settled on the retry, not repeated or failed', async () => {
    start();
    const m1 = await send('one');
    await until('the first turn', () => (client.requests.length === 1 ? true : undefined));
    fault.afterCommit = new SluiceError(
      'unavailable',
      'lost the connection to PostgreSQL at h:5432/db mid-request (Connection terminated unexpectedly); it may or may not have taken effect',
      { reason: 'database', applied: 'unknown' },
    );
    client.finish({ ok: true });
    await until('the turn settled', () => (reports.length === 1 ? true : undefined));
    expect(events.map((e) => e.phase)).toEqual(['unavailable', 'back']);
    expect(reports[0]).toMatchObject({ outcome: 'ok', delivered: [m1], handled: [m1], returned: [] });
    expect(await states()).toEqual([[m1, 'handled']]);
    expect(settledLoop.outcome).toBeUndefined();
  });

  test('a message arriving while the database refuses connections is dispatched once it answers', async () => {
    start();
    const m1 = await send('one');
    await until('the first turn', () => (client.requests.length === 1 ? true : undefined));
    client.finish({ ok: true });
    await until('the first turn settled', () => (reports.length === 1 ? true : undefined));
    // The loop now waits for a change; the send wakes it and its look at the queue fails.
    fault.current = socketError('ECONNREFUSED');
    const m2 = await send('two');
    await until('two failed looks', () => (failures() >= 2 ? true : undefined));
    fault.current = pgError('08006', 'connection failure');
    const before = failures();
    await until('a failed look on a broken connection', () => (failures() > before ? true : undefined));
    fault.current = socketError('ECONNRESET');
    const again = failures();
    await until('a failed look on a reset connection', () => (failures() > again ? true : undefined));
    fault.current = undefined;
    await until('the second turn', () => (client.requests.length === 2 ? true : undefined));
    expect(client.ids(1)).toEqual([m2]);
    client.finish({ ok: true });
    await until('the second turn settled', () => (reports.length === 2 ? true : undefined));
    expect(await states()).toEqual([
      [m1, 'handled'],
      [m2, 'handled'],
    ]);
  });

  test('a turn that fails because the database is down does not count against its messages', async () => {
    start();
    const m1 = await send('one');
    // Four turns in a row end with the store's own unavailable (more than the 3 attempts after
    // which a message that keeps failing its turns is returned).
    for (let i = 1; i <= 4; i++) {
      await until(`turn ${i}`, () => (client.requests.length === i ? true : undefined));
      client.finish(
        new SluiceError('unavailable', 'cannot reach PostgreSQL at h:5432/db (connect ECONNREFUSED)', {
          reason: 'database',
          applied: 'no',
        }),
      );
      await until(`turn ${i} abandoned`, () => (reports.length === i ? true : undefined));
    }
    await until('turn 5', () => (client.requests.length === 5 ? true : undefined));
    expect(client.ids(4)).toEqual([m1]);
    client.finish({ ok: true });
    await until('turn 5 settled', () => (reports.length === 5 ? true : undefined));
    expect(await states()).toEqual([[m1, 'handled']]);
  });

  test('a turn that fails on a disk I/O error counts against its messages: returned at the limit, not redelivered forever', async () => {
    start();
    const m1 = await send('one');
    // Every turn fails the same way (say, an attachment on a failing disk): retrying it forever
    // would hide the fault, so the message is returned after its 3 attempts like any other.
    for (let i = 1; i <= 3; i++) {
      await until(`turn ${i}`, () => (client.requests.length === i ? true : undefined));
      client.finish(
        new SluiceError('unavailable', 'disk I/O error (EIO): the database could not be read or written', {
          reason: 'io',
        }),
      );
      await until(`turn ${i} abandoned`, () => (reports.length === i ? true : undefined));
    }
    await until('the message returned', async () => {
      const s = await states();
      return s[0]?.[1] === 'returned' ? s : undefined;
    });
    expect(client.requests).toHaveLength(3);
    const row = await h.ctx.store.db
      .selectFrom('inbox')
      .select('failure_kind')
      .where('message_id', '=', m1)
      .executeTakeFirstOrThrow();
    expect(row.failure_kind).toBe('repeated_failure');
  });

  test('a driver whose lease lapsed during the outage and was taken over begins no turn once the database is back', async () => {
    // Driver A's clock: the test moves it past the lease while the database is away.
    let skewMs = 0;
    const ctx: HostContext = {
      ...h.ctx,
      store: flakyStore(h.ctx.store, fault),
      now: () => new Date(Date.now() + skewMs),
    };
    const lostByRenewal: unknown[] = [];
    const held = await holdDriver(
      ctx,
      bot,
      { client: 'claude', pid: process.pid, supervised: false },
      {
        onLost: (e) => lostByRenewal.push(e),
      },
    );
    loop = runDriverLoop(ctx, bot, client, {
      signal: stop.signal,
      retryDelayMs: 1,
      outageBackoffMs: () => 2,
      onTurn: (r) => reports.push(r),
      onOutage: (e) => events.push(e),
      confirmHold: () => held.confirm(),
    });
    loop.then(
      () => {
        settledLoop = { outcome: 'resolved' };
      },
      (error: unknown) => {
        settledLoop = { outcome: 'rejected', error };
      },
    );
    const m1 = await send('one');
    await until('the first turn', () => (client.requests.length === 1 ? true : undefined));
    client.finish({ ok: true });
    await until('the first turn settled', () => (reports.length === 1 ? true : undefined));
    // The database goes away for longer than the lease: A cannot renew, and driver B (here, on
    // the test's healthy handle) takes the agent over once it answers again.
    fault.current = socketError('ECONNREFUSED');
    const m2 = await send('two');
    await until('a failed look', () => (failures() >= 1 ? true : undefined));
    skewMs = DRIVER_LEASE_MS + 10_000;
    const later = new Date(Date.now() + skewMs);
    const taker = await claimDriver(
      h.ctx,
      bot,
      { client: 'codex', pid: 4901, supervised: true },
      { now: later },
    );
    fault.current = undefined;
    // A's loop sees m2 is ready; it must learn it lost the agent before it begins a turn.
    await eventually(
      async () => (settledLoop.outcome !== undefined || client.requests.length > 1 ? true : undefined),
      10_000,
      'the loop ended or began a second turn',
    );
    expect(client.requests).toHaveLength(1);
    expect(settledLoop.outcome).toBe('resolved');
    expect(held.lost?.message).toMatch(/already driven by sluice serve \(sluice drive codex, pid 4901 /);
    // The loop stopped by itself: the renewal's SIGTERM path is not taken as well.
    expect(lostByRenewal).toEqual([]);
    expect(await states()).toEqual([
      [m1, 'handled'],
      [m2, 'waiting'],
    ]);
    await held.release();
    const row = await h.ctx.store.db
      .selectFrom('agent_drivers')
      .select('holder')
      .where('agent_id', '=', bot.id)
      .executeTakeFirst();
    expect(row?.holder).toBe(taker);
  });

  test.each([
    ['an unknown error', new Error('Cannot read properties of undefined')],
    ['a wrong password (28P01)', pgError('28P01', 'password authentication failed for user "sluice"')],
    ['a Sluice denial', new SluiceError('denied', 'bot may not do that')],
  ])('%s ends the loop with that error, reporting no outage', async (_, err) => {
    start();
    fault.current = err;
    await send('one');
    await expect(loop).rejects.toBe(err);
    expect(events).toEqual([]);
  });
});
