// One agent, one driver (src/host/agents/driver-lock.ts, migration 024) on SQLite and PostgreSQL:
// a second driver is refused in one coded line naming the first and changes nothing; a lapsed
// lease or a dead pid on this machine is taken over, a live holder elsewhere never is; of drivers
// racing for one agent exactly one wins (property); a driver taken over learns it on renewal and
// its release leaves the new holder alone; a supervised driver waits for a stopping one.
import fc from 'fast-check';
import type { KyselyPlugin } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { thisMachine } from '../../src/host/agents/agent-runs.js';
import {
  claimDriver,
  DRIVER_LEASE_MS,
  DRIVER_RENEW_MS,
  holdDriver,
  RELEASE_WAIT_MS,
  releaseDriver,
  renewDriver,
} from '../../src/host/agents/driver-lock.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { findAgentDriver } from '../../src/store/ops/agent-drivers.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { snapshotStore } from '../support/store-snapshot.js';

const byHand = (pid: number) => ({ client: 'claude' as const, pid, supervised: false });
const alive = () => true;

describe.each(backendsUnderTest())('one driver per agent (%s)', (backend) => {
  let h: ConformanceHost;
  beforeAll(async () => {
    h = await openConformanceHost(backend, 'drivers');
  }, 60_000);
  afterAll(async () => h?.close());

  it('a second driver is refused in one line naming the first, and the store is unchanged', async () => {
    const bot = await h.agent('bot1', 'turn');
    const holder = await claimDriver(h.ctx, bot, byHand(4101), { isAlive: alive });
    const before = await snapshotStore(h.ctx);
    const other = await h.sibling();
    const refusal = await claimDriver(other, bot, byHand(4102), { isAlive: alive }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(SluiceError);
    expect((refusal as SluiceError).code).toBe('conflict');
    expect((refusal as SluiceError).message).toBe(
      `agent bot1 is already driven by sluice drive claude (pid 4101 on ${thisMachine()}, home ${h.ctx.home}); stop that driver first`,
    );
    expect(await snapshotStore(h.ctx)).toEqual(before);
    expect((await findAgentDriver(h.ctx.store.db, bot.id))?.holder).toBe(holder);
    expect(await releaseDriver(h.ctx, bot, holder)).toBe(true);
    expect(await findAgentDriver(h.ctx.store.db, bot.id)).toBeUndefined();
  });

  it('a supervised holder is named as sluice serve, with the commands that restart or stop it', async () => {
    const bot = await h.agent('bot2', 'turn');
    const holder = await claimDriver(
      h.ctx,
      bot,
      { client: 'codex', pid: 4201, supervised: true },
      { isAlive: alive },
    );
    await expect(claimDriver(h.ctx, bot, byHand(4202), { isAlive: alive })).rejects.toThrow(
      `agent bot2 is already driven by sluice serve (sluice drive codex, pid 4201 on ${thisMachine()}, home ${h.ctx.home}); use sluice agent restart bot2 or sluice agent stop bot2`,
    );
    await releaseDriver(h.ctx, bot, holder);
  });

  it('a lapsed lease or a dead pid on this machine is taken over; a live holder elsewhere is not', async () => {
    const bot = await h.agent('bot3', 'turn');
    const first = await claimDriver(h.ctx, bot, byHand(4301), { isAlive: alive });
    // Its pid is gone (killed, crashed): taken over at once.
    const second = await claimDriver(h.ctx, bot, byHand(4302), { isAlive: (pid) => pid !== 4301 });
    expect(second).not.toBe(first);
    // Its lease lapsed (a driver elsewhere that died, or cut off from the store): taken over.
    const later = new Date(Date.now() + DRIVER_LEASE_MS + 1_000);
    const third = await claimDriver(h.ctx, bot, byHand(4303), { now: later, isAlive: alive });
    expect((await findAgentDriver(h.ctx.store.db, bot.id))?.holder).toBe(third);
    // A holder on another machine: its pid means nothing here, only its lease counts.
    await h.ctx.store.db
      .updateTable('agent_drivers')
      .set({ machine: 'other-box' })
      .where('agent_id', '=', bot.id)
      .execute();
    await expect(claimDriver(h.ctx, bot, byHand(4304), { now: later, isAlive: () => false })).rejects.toThrow(
      /already driven by sluice drive claude \(pid 4303 on other-box,/,
    );
    await releaseDriver(h.ctx, bot, third);
  });

  it('a driver taken over learns it on renewal, and its release leaves the new holder alone', async () => {
    const bot = await h.agent('bot4', 'turn');
    const old = await claimDriver(h.ctx, bot, byHand(4401), { isAlive: alive });
    expect(await renewDriver(h.ctx, bot, old)).toEqual({ held: true });
    const later = new Date(Date.now() + DRIVER_LEASE_MS + 1_000);
    const taker = await claimDriver(h.ctx, bot, byHand(4402), { now: later, isAlive: alive });
    const renewed = await renewDriver(h.ctx, bot, old);
    expect(renewed.held).toBe(false);
    expect(!renewed.held && renewed.lost.message).toMatch(
      /already driven by sluice drive claude \(pid 4402 /,
    );
    expect(await releaseDriver(h.ctx, bot, old)).toBe(false);
    expect((await findAgentDriver(h.ctx.store.db, bot.id))?.holder).toBe(taker);
    // Once the taker let go too, the old one still stops: it was not the only driver meanwhile.
    await releaseDriver(h.ctx, bot, taker);
    const gone = await renewDriver(h.ctx, bot, old);
    expect(!gone.held && gone.lost.message).toMatch(/was taken over by another driver/);
  });

  it('a hold that missed its renewals is renewed before a turn, and found lost once taken over', async () => {
    const bot = await h.agent('bot5', 'turn');
    let skewMs = 0;
    const ctx = { ...h.ctx, now: () => new Date(Date.now() + skewMs) };
    const lostByRenewal: SluiceError[] = [];
    const held = await holdDriver(ctx, bot, byHand(process.pid), { onLost: (e) => lostByRenewal.push(e) });
    expect(await held.confirm()).toBe(true);
    // The store was away past the lease, and another driver took the agent meanwhile.
    skewMs = DRIVER_LEASE_MS + 10_000;
    const taker = await claimDriver(h.ctx, bot, byHand(4501), { now: ctx.now(), isAlive: alive });
    expect(await held.confirm()).toBe(false);
    expect(held.lost?.message).toMatch(/already driven by sluice drive claude \(pid 4501 /);
    expect(lostByRenewal).toEqual([]);
    await held.release();
    expect((await findAgentDriver(h.ctx.store.db, bot.id))?.holder).toBe(taker);
    // Not taken over: the stale hold is renewed and the driver goes on.
    await releaseDriver(h.ctx, bot, taker);
    skewMs = 0;
    const again = await holdDriver(ctx, bot, byHand(process.pid), { onLost: (e) => lostByRenewal.push(e) });
    skewMs = DRIVER_LEASE_MS - 1_000;
    expect(await again.confirm()).toBe(true);
    const row = await findAgentDriver(h.ctx.store.db, bot.id);
    expect(Date.parse(row?.held_until ?? '')).toBeGreaterThan(Date.now() + DRIVER_LEASE_MS);
    await again.release();
  });

  it('property: of drivers racing for one agent, exactly one wins and the others name it', async () => {
    const contexts = [h.ctx, await h.sibling(), await h.sibling()];
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 6 }),
        fc.constantFrom('none', 'lapsed', 'dead'),
        async (racers, before) => {
          const bot = await h.agent(`race${round++}`, 'turn');
          const later = new Date(Date.now() + DRIVER_LEASE_MS + 1_000);
          // What the racers find: nobody, a holder whose lease lapsed, or one whose pid is gone.
          if (before !== 'none') await claimDriver(h.ctx, bot, byHand(4500), { isAlive: alive });
          const isAlive = (pid: number) => !(before === 'dead' && pid === 4500);
          const now = before === 'lapsed' ? later : undefined;
          const results = await Promise.allSettled(
            Array.from({ length: racers }, (_, i) =>
              claimDriver(contexts[i % contexts.length]!, bot, byHand(4600 + i), { now, isAlive }),
            ),
          );
          const won = results.filter((r) => r.status === 'fulfilled');
          expect(won).toHaveLength(1);
          const row = await findAgentDriver(h.ctx.store.db, bot.id);
          expect(row?.holder).toBe((won[0] as PromiseFulfilledResult<string>).value);
          for (const r of results) {
            if (r.status === 'rejected') {
              expect((r.reason as SluiceError).code).toBe('conflict');
              expect((r.reason as SluiceError).message).toContain(`(pid ${row?.pid} on `);
            }
          }
        },
      ),
      { numRuns: 12 },
    );
  }, 60_000);

  it('a supervised driver waits for the holder to let go; by hand, or past its wait, it is refused', async () => {
    const bot = await h.agent('bot6', 'turn');
    const lost = () => {
      throw new Error('not expected to lose the agent');
    };
    const first = await holdDriver(h.ctx, bot, byHand(process.pid), { onLost: lost });
    await expect(holdDriver(h.ctx, bot, byHand(process.pid), { onLost: lost })).rejects.toMatchObject({
      code: 'conflict',
    });
    await expect(
      holdDriver(h.ctx, bot, { ...byHand(process.pid), supervised: true }, { onLost: lost, waitMs: 0 }),
    ).rejects.toMatchObject({ code: 'conflict' });
    const other = await h.sibling();
    let told: (holder: SluiceError) => void = () => {};
    const waits = new Promise<SluiceError>((resolve) => {
      told = resolve;
    });
    const waiting = holdDriver(
      other,
      bot,
      { ...byHand(process.pid), supervised: true },
      { onLost: lost, waitMs: 30_000, onWait: (holder) => told(holder) },
    );
    // It says whom it waits for, then takes the agent once that driver let go.
    expect((await waits).message).toMatch(/^agent bot6 is already driven by sluice drive claude \(pid /);
    await first.release();
    const second = await waiting;
    expect((await findAgentDriver(h.ctx.store.db, bot.id))?.holder).toBe(second.holder);
    await second.release();
    expect(await findAgentDriver(h.ctx.store.db, bot.id)).toBeUndefined();
  });
});

// A stop during an outage: the store's calls hang (a pool waiting out a database that is gone).
// The release must not wait for them; the lease lapses by itself.
describe('a driver stopping while its store hangs', () => {
  let h: TestHost;
  beforeEach(async () => {
    h = await openTestHost();
  });
  afterEach(async () => {
    vi.useRealTimers();
    await h.close();
  });

  it('gives the agent back within a second, without waiting for the renewal in flight', async () => {
    const bot = await h.agent('bot', 'turn');
    const hang = { on: false };
    const never = new Promise<never>(() => {});
    const plugin: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        if (hang.on) await never;
        return args.result;
      },
    };
    const ctx: HostContext = { ...h.ctx, store: { ...h.ctx.store, db: h.ctx.store.db.withPlugin(plugin) } };
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
    const lost: SluiceError[] = [];
    const held = await holdDriver(ctx, bot, byHand(process.pid), { onLost: (e) => lost.push(e) });
    hang.on = true;
    // A renewal starts and never answers.
    await vi.advanceTimersByTimeAsync(DRIVER_RENEW_MS);
    let released = false;
    const release = held.release().then(() => {
      released = true;
    });
    await vi.advanceTimersByTimeAsync(RELEASE_WAIT_MS);
    expect(released).toBe(true);
    await release;
    expect(lost).toEqual([]);
  });
});
