// `channel.list {order: "activity", filter?, channelId?}` (issue 28) on both backends: the filter
// and the one-channel lookup list only the caller's current channels (an outsider, a non-member
// and a removed member see nothing of a channel whose name matches), cursors are bound to the
// caller and the filter, bad params are refused with one line, and a filter that matches little
// answers in bounded pages. On SQLite, the page is one walk of `memberships_by_activity` (EXPLAIN
// QUERY PLAN), with no sort.
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely } from 'kysely';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { seedChannels } from '../../bench/channels.js';
import { FILTER_SCAN } from '../../src/host/channels/channel-pages.js';
import {
  addMember,
  createChannel,
  LIST_MEMBERS_SHOWN,
  removeMember,
} from '../../src/host/channels/channels.js';
import { acceptInvitation } from '../../src/host/channels/invitations.js';
import { MAX_UNREAD } from '../../src/host/channels/read-marks.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { listChannelsByActivity } from '../../src/store/ops/channel-activity.js';
import type { Database } from '../../src/store/schema.js';
import { LockWaitingSqliteDialect } from '../../src/store/sqlite/driver.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS } from '../../src/surfaces/rpc/methods.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect reply JSON field by field.
type Json = any;

describe.each(backendsUnderTest())('channel.list by activity (%s)', (backend) => {
  let h: ConformanceHost;
  const hosts = conformanceHostSeries(backend, 'listactivity');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
  });
  afterEach(async () => {
    await h.close();
  });

  async function rpc(principal: Principal, params: unknown): Promise<Json> {
    const reply = await handleRpcText(
      { ctx: h.ctx, principal, limits: DEFAULT_RPC_LIMITS },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'channel.list', params }),
    );
    return JSON.parse(reply ?? 'null');
  }
  const names = (reply: Json): string[] => reply.result.channels.map((c: { name: string }) => c.name);

  it('a filter and a channel id list only channels the caller is in now: outsider, non-member, removed member', async () => {
    const alice = await h.person('alice');
    const bob = await h.person('bob');
    const mallory = await h.person('mallory');
    const secret = await createChannel(h.ctx, alice, { name: 'secret-plans', members: [] });
    const shared = await createChannel(h.ctx, bob, { name: 'secret-shared', members: [] });
    await createChannel(h.ctx, bob, { name: 'plans-of-bob', members: [] });
    // Bob was in #secret-plans once (invited by alice, he accepted) and was removed.
    await createChannel(h.ctx, alice, { name: 'other', members: [] });
    await addMember(h.ctx, alice, secret.id, 'bob');
    await acceptInvitation(h.ctx, bob, secret.id);
    expect(names(await rpc(bob, { order: 'activity', filter: 'secret' }))).toEqual([
      'secret-plans',
      'secret-shared',
    ]);
    await removeMember(h.ctx, alice, secret.id, 'bob');
    const before = await snapshotStore(h.ctx);
    expect(names(await rpc(bob, { order: 'activity', filter: 'SECRET' }))).toEqual(['secret-shared']);
    expect(names(await rpc(bob, { order: 'activity', filter: 'plans' }))).toEqual(['plans-of-bob']);
    expect(names(await rpc(mallory, { order: 'activity', filter: 'secret' }))).toEqual([]);
    expect(names(await rpc(mallory, { order: 'activity', filter: 's' }))).toEqual([]);
    for (const who of [bob, mallory])
      expect(await rpc(who, { order: 'activity', channelId: secret.id })).toMatchObject({
        result: { channels: [], nextCursor: null },
      });
    expect(names(await rpc(alice, { order: 'activity', channelId: secret.id }))).toEqual(['secret-plans']);
    expect(names(await rpc(alice, { order: 'activity', channelId: shared.id }))).toEqual([]);
    // LIKE's own characters are text in a filter.
    expect(names(await rpc(alice, { order: 'activity', filter: '%' }))).toEqual([]);
    expect(names(await rpc(alice, { order: 'activity', filter: '_' }))).toEqual([]);
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('refuses bad params with one line, and a cursor of another caller or another filter', async () => {
    const alice = await h.person('alice');
    for (let i = 0; i < 3; i++) await createChannel(h.ctx, alice, { name: `room-${i}`, members: [] });
    const refusals: [unknown, string, RegExp][] = [
      [{ order: 'activity', filter: '' }, 'invalid_params', /filter must be 1 to 64/],
      [{ order: 'activity', filter: 'x'.repeat(65) }, 'invalid_params', /filter must be 1 to 64/],
      [{ order: 'activity', filter: '\ud800' }, 'invalid_params', /filter/],
      [{ filter: 'room' }, 'invalid_params', /need order "activity"/],
      [{ channelId: 'c_x' }, 'invalid_params', /need order "activity"/],
      [{ order: 'activity', channelId: 'c_x', filter: 'a' }, 'invalid_params', /channelId lists one channel/],
      [{ order: 'recent' }, 'invalid_params', /order/],
      [{ order: 'activity', limit: 0 }, 'invalid_params', /limit/],
    ];
    for (const [params, code, message] of refusals) {
      const reply = await rpc(alice, params);
      expect(reply.error?.data?.code ?? reply.error?.message, JSON.stringify(params)).toBeDefined();
      expect(JSON.stringify(reply.error), JSON.stringify(params)).toContain(code);
      expect(reply.error.message).toMatch(message);
    }
    const page = (await rpc(alice, { order: 'activity', filter: 'room', limit: 1 })).result;
    expect(page.nextCursor).toEqual(expect.any(String));
    const other = await rpc(alice, { order: 'activity', filter: 'roo', cursor: page.nextCursor });
    expect(JSON.stringify(other.error)).toContain('invalid_cursor');
    const unfiltered = await rpc(alice, { order: 'activity', cursor: page.nextCursor });
    expect(JSON.stringify(unfiltered.error)).toContain('invalid_cursor');
    const owner = await rpc(h.owner, { order: 'activity', filter: 'room', cursor: page.nextCursor });
    expect(JSON.stringify(owner.error)).toContain('invalid_cursor');
    const next = await rpc(alice, { order: 'activity', filter: 'room', limit: 5, cursor: page.nextCursor });
    expect(names(next)).toEqual(['room-1', 'room-0']);
  });

  it(`a filter that matches little examines at most ${FILTER_SCAN} channels per page and walks on`, async () => {
    if (backend !== 'sqlite') return; // seedChannels writes SQLite's SQL; the logic is the same.
    const helper = await h.agent('helper');
    await seedChannels(h.ctx, h.owner, helper, FILTER_SCAN + 500);
    // ch-00001..ch-00009 hold the oldest activity: past the first scan window.
    let reply = await rpc(h.owner, { order: 'activity', filter: 'ch-0000' });
    expect(names(reply)).toEqual([]);
    expect(reply.result.nextCursor).toEqual(expect.any(String));
    reply = await rpc(h.owner, { order: 'activity', filter: 'ch-0000', cursor: reply.result.nextCursor });
    expect(names(reply)).toEqual(Array.from({ length: 9 }, (_, i) => `ch-0000${9 - i}`));
    expect(reply.result.nextCursor).toBeNull();
  });

  it('serves the first page and the next from the activity index, without a sort (EXPLAIN QUERY PLAN)', async () => {
    if (backend !== 'sqlite') return; // PostgreSQL's plans: docs/rpc.md ("channel.list").
    const helper = await h.agent('helper');
    await seedChannels(h.ctx, h.owner, helper, 300);
    // A second connection to the same file, logging the statements the store op compiles.
    const raw = new BetterSqlite3(join(h.home, 'sluice.db'));
    const queries: { sql: string; parameters: readonly unknown[] }[] = [];
    const logged = new Kysely<Database>({
      dialect: new LockWaitingSqliteDialect(raw),
      log: (event) => {
        if (event.level === 'query') queries.push(event.query);
      },
    });
    try {
      const columns = { shown: LIST_MEMBERS_SHOWN, maxUnread: MAX_UNREAD };
      const first = await listChannelsByActivity(logged, h.owner.id, { limit: 31, ...columns });
      const last = first.rows[30];
      if (!last) throw new Error('seeded too few');
      await listChannelsByActivity(logged, h.owner.id, {
        limit: 31,
        after: { activity: last.activity, channelId: last.id },
        ...columns,
      });
      expect(queries).toHaveLength(2);
      for (const q of queries) {
        const plan = raw.prepare(`explain query plan ${q.sql}`).all(...(q.parameters as unknown[])) as {
          id: number;
          parent: number;
          detail: string;
        }[];
        // The walk itself: the sidebar columns' subqueries sort a row's members by name.
        const inColumns = new Set<number>();
        for (const p of plan)
          if (p.detail.startsWith('CORRELATED SCALAR SUBQUERY') || inColumns.has(p.parent))
            inColumns.add(p.id);
        expect(inColumns.size).toBeGreaterThan(0);
        const details = plan
          .filter((p) => !inColumns.has(p.id))
          .map((p) => p.detail)
          .join('\n');
        expect(details).toMatch(/SEARCH memberships USING (COVERING )?INDEX memberships_by_activity/);
        expect(details).not.toMatch(/TEMP B-TREE/);
      }
    } finally {
      await logged.destroy();
    }
  });
});
