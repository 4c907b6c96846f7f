import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sendMessage } from '../../src/host/messages.js';
import { agentPresence } from '../../src/host/presence.js';
import type { Principal } from '../../src/host/principals.js';
import { abandonTurn, beginTurn, endTurn } from '../../src/host/turns/index.js';
import type { Database } from '../../src/store/schema.js';
import { openTestHost } from '../support/host.js';
import { openServedHost, type RpcClient, type ServedHost } from './support.js';

describe("queue.summary says the agent's presence (from its turns)", () => {
  let host: ServedHost;
  let helper: Principal;
  let owner: RpcClient;
  beforeEach(async () => {
    host = await openServedHost();
    helper = await host.agent('helper');
    await sendMessage(host.ctx, host.owner, { to: 'helper', body: 'hi' });
    owner = await host.client();
  });
  afterEach(() => host.close());

  const presence = async () => (await owner.ok('queue.summary', { agent: 'helper' })).presence;

  it('idle with no activity before any turn; driven while sluice drive runs a turn; idle with the outcome after', async () => {
    expect(await presence()).toEqual({
      state: 'idle',
      lastActivityAt: null,
      lastOutcome: null,
      driver: false,
    });
    const driven = await beginTurn(host.ctx, helper, { receipt: 'seen' });
    expect(await presence()).toEqual({
      state: 'driven',
      lastActivityAt: driven.started_at,
      lastOutcome: null,
      driver: true,
    });
    await endTurn(host.ctx, helper, driven.id, { ok: true });
    const after = await presence();
    expect(after).toMatchObject({ state: 'idle', lastOutcome: 'succeeded', driver: true });
    expect(after.lastActivityAt >= driven.started_at).toBe(true);
  });

  it('in-turn while a hook-woken session (a written-receipt turn) works; abandoned shows as the last outcome', async () => {
    const woken = await beginTurn(host.ctx, helper);
    expect(await presence()).toMatchObject({ state: 'in-turn', driver: false });
    await abandonTurn(host.ctx, helper, woken.id);
    expect(await presence()).toMatchObject({ state: 'idle', lastOutcome: 'abandoned' });
  });

  it('follows the agent live: a turn that starts or ends is pushed as queue.changed with the presence', async () => {
    await owner.ok('subscribe', { queues: ['helper'] });
    await owner.waitFor((n) => n.method === 'queue.changed' && n.params.summary.presence?.state === 'idle');
    // Beginning a turn changes no queue count; it is pushed anyway, so the page never shows it late.
    const turn = await beginTurn(host.ctx, helper, { receipt: 'seen' });
    await owner.waitFor((n) => n.method === 'queue.changed' && n.params.summary.presence?.state === 'driven');
    await endTurn(host.ctx, helper, turn.id, { ok: true });
    const ended = await owner.waitFor(
      (n) => n.method === 'queue.changed' && n.params.summary.presence?.lastOutcome === 'succeeded',
    );
    expect(ended.params.summary.presence).toMatchObject({ state: 'idle', driver: true });
  });

  it('is not shown to someone who may not see the queue', async () => {
    await host.person('mallory');
    const outsider = await host.client('mallory');
    const reply = await outsider.call('queue.summary', { agent: 'helper' });
    expect(reply.result).toBeUndefined();
    expect(reply.error?.message).toMatch(
      /only helper, its managers, the owner or a person who shares a channel with it/,
    );
  });
});

describe('the presence read', () => {
  it('is one index probe on turns_by_start (EXPLAIN QUERY PLAN: no scan; only a tie of start times is sorted)', async () => {
    const h = await openTestHost();
    const agent = await h.agent('busy');
    await beginTurn(h.ctx, agent);
    const raw = new BetterSqlite3(join(h.home, 'sluice.db'));
    const queries: { sql: string; parameters: readonly unknown[] }[] = [];
    const logged = new Kysely<Database>({
      dialect: new SqliteDialect({ database: raw }),
      log: (event) => {
        if (event.level === 'query')
          queries.push({ sql: event.query.sql, parameters: event.query.parameters });
      },
    });
    try {
      expect((await agentPresence(logged, agent.id)).state).toBe('in-turn');
      expect(queries).toHaveLength(1);
      const q = queries[0] as (typeof queries)[number];
      const plan = raw.prepare(`explain query plan ${q.sql}`).all(...(q.parameters as unknown[])) as {
        detail: string;
      }[];
      // The tie-break keys sort only the turns that share the newest start (test/host/presence.test.ts).
      expect(plan.map((p) => p.detail)).toEqual([
        expect.stringMatching(/^SEARCH turns USING INDEX turns_by_start/),
        'USE TEMP B-TREE FOR LAST 3 TERMS OF ORDER BY',
      ]);
    } finally {
      await logged.destroy();
      await h.close();
    }
  });
});
