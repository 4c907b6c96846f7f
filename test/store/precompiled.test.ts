// Queries built once (src/store/precompiled.ts) run with each call's arguments, on both backends,
// and give what the same query built per call gives.
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { precompile } from '../../src/store/precompiled.js';
import type { Db } from '../../src/store/store.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';

const EVENTS_OF = precompile((db: Db, agentId: string, limit: number) =>
  db
    .selectFrom('events')
    .select(['kind', 'agent_id'])
    .where('agent_id', '=', agentId)
    .where('kind', '=', 'turn.changed')
    .orderBy('seq')
    .limit(limit),
);

const APPEND = precompile((db: Db, agentId: string | null, at: string) =>
  db.insertInto('events').values({ kind: 'turn.changed', agent_id: agentId, created_at: at }),
);

const EVENTS_OF_AGENTS = precompile((db: Db, agentIds: readonly string[], kind: 'turn.changed') =>
  db
    .selectFrom('events')
    .select(['agent_id'])
    .where('agent_id', 'in', agentIds)
    .where('kind', '=', kind)
    .orderBy('seq'),
);

const APPEND_ROWS = precompile(
  (db: Db, rows: readonly { kind: 'turn.changed'; agent_id: string | null; created_at: string }[]) =>
    db.insertInto('events').values([...rows]),
);

describe.each(backendsUnderTest())('precompiled queries (%s)', (backend) => {
  let h: ConformanceHost;
  const hosts = conformanceHostSeries(backend, 'precompiled');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
  });
  afterEach(() => h.close());

  it('run with each call’s arguments, in and out of transactions, keeping constants', async () => {
    const db = h.ctx.store.db;
    expect(await APPEND.run(db, 'a1', 't1')).toBe(1);
    await h.ctx.store.transaction(async (trx) => {
      await APPEND.run(trx, 'a2', 't2');
      await APPEND.run(trx, 'a1', 't3');
      expect(await EVENTS_OF.all(trx, 'a1', 10)).toHaveLength(2);
    });
    await APPEND.run(db, null, 't4');
    expect(await EVENTS_OF.all(db, 'a1', 10)).toEqual([
      { kind: 'turn.changed', agent_id: 'a1' },
      { kind: 'turn.changed', agent_id: 'a1' },
    ]);
    expect(await EVENTS_OF.all(db, 'a1', 1)).toHaveLength(1);
    expect(await EVENTS_OF.first(db, 'a2', 10)).toEqual({ kind: 'turn.changed', agent_id: 'a2' });
    expect(await EVENTS_OF.first(db, 'nobody', 10)).toBeUndefined();
    const built = await db
      .selectFrom('events')
      .select(['kind', 'agent_id'])
      .where('agent_id', '=', 'a1')
      .where('kind', '=', 'turn.changed')
      .orderBy('seq')
      .limit(10)
      .execute();
    expect(await EVENTS_OF.all(db, 'a1', 10)).toEqual(built);
  });

  it('build anew under a plugin, which sees every statement', async () => {
    let seen = 0;
    const db = h.ctx.store.db.withPlugin({
      transformQuery: (args) => {
        seen++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    await APPEND.run(db, 'a1', 't1');
    await EVENTS_OF.all(db, 'a1', 5);
    expect(seen).toBe(2);
  });

  it('refuse a builder that uses an argument as anything but a value', async () => {
    // The argument decides the query's shape: a stand-in would pick one shape for every call.
    const misuse = precompile((db: Db, agentId: string | null) =>
      agentId === null
        ? db.selectFrom('events').selectAll().where('agent_id', 'is', null)
        : db.selectFrom('events').selectAll().where('kind', '=', 'turn.changed'),
    );
    await expect(misuse.all(h.ctx.store.db, null)).rejects.toThrow(
      'a precompiled query uses 0 of its 1 arguments as values',
    );
  });

  it('take lists of any length, one template per length, and give what a query built per call gives', async () => {
    const db = h.ctx.store.db;
    const ids = Array.from({ length: 130 }, (_, i) => `agent-${i}`);
    for (const [i, id] of ids.entries()) if (i % 3 === 0) await APPEND.run(db, id, `t${i}`);
    const built = (list: readonly string[]) =>
      db
        .selectFrom('events')
        .select(['agent_id'])
        .where('agent_id', 'in', list)
        .where('kind', '=', 'turn.changed')
        .orderBy('seq')
        .execute();
    // 1, 2 and 20 reuse a template each; 130 is longer than any kept and is built per call.
    for (const list of [ids.slice(0, 1), ids.slice(3, 5), ids.slice(0, 20), ids.slice(20, 40), ids]) {
      expect(await EVENTS_OF_AGENTS.all(db, list, 'turn.changed')).toEqual(await built(list));
    }
    expect(await EVENTS_OF_AGENTS.all(db, ids.slice(0, 20), 'turn.changed')).toHaveLength(7);
    await expect(EVENTS_OF_AGENTS.all(db, [], 'turn.changed')).rejects.toThrow('empty list');
  });

  it('insert rows of bound columns, a null in one call never sticking to the next', async () => {
    const db = h.ctx.store.db;
    const row = (agent: string | null, at: string) => ({
      kind: 'turn.changed' as const,
      agent_id: agent,
      created_at: at,
    });
    await APPEND_ROWS.run(db, [row(null, 'r1'), row('x', 'r2')]);
    await APPEND_ROWS.run(db, [row('y', 'r3'), row(null, 'r4')]);
    // Rows whose columns differ are built per call rather than bound to another shape.
    await APPEND_ROWS.run(db, [row('z', 'r5'), { kind: 'turn.changed', created_at: 'r6' } as never]);
    const stored = await db
      .selectFrom('events')
      .select(['agent_id', 'created_at'])
      .where('created_at', 'like', 'r%')
      .orderBy('seq')
      .execute();
    expect(stored).toEqual([
      { agent_id: null, created_at: 'r1' },
      { agent_id: 'x', created_at: 'r2' },
      { agent_id: 'y', created_at: 'r3' },
      { agent_id: null, created_at: 'r4' },
      { agent_id: 'z', created_at: 'r5' },
      { agent_id: null, created_at: 'r6' },
    ]);
  });
});
