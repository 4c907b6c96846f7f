// An agent's presence comes from its latest turn; turns that started in the same millisecond must
// still give one answer, whatever order they were stored in and on either backend.
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentPresence } from '../../src/host/presence.js';
import type { Principal } from '../../src/host/principals.js';
import { abandonTurn, beginTurn } from '../../src/host/turns/index.js';
import { insertTurn, type TurnRow } from '../../src/store/ops/turns.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';

const AT = '2026-11-30T12:00:00.000Z';
const LATER = '2026-11-30T12:00:00.005Z';

describe.each(backendsUnderTest())('latest turn with equal start times (%s)', (backend) => {
  let h: ConformanceHost;
  let agent: Principal;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'presence');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
    agent = await h.agent('helper', 'turn');
  });
  afterEach(() => h.close());

  const turn = (id: string, patch: Partial<TurnRow>): TurnRow => ({
    id,
    agent_id: agent.id,
    state: 'succeeded',
    session_key: null,
    owner: 'test',
    started_at: AT,
    ended_at: AT,
    failure_kind: null,
    reason: null,
    receipt: 'written',
    ...patch,
  });
  const presence = () => agentPresence(h.ctx.store.db, agent.id);

  it('a turn that superseded another in the same millisecond is the latest (in-turn)', async () => {
    const fixed = new Date(AT);
    h.ctx.now = () => fixed;
    const first = await beginTurn(h.ctx, agent, { receipt: 'seen' });
    await abandonTurn(h.ctx, agent, first.id);
    const second = await beginTurn(h.ctx, agent);
    expect(second.started_at).toBe(first.started_at);
    expect(await presence()).toEqual({
      state: 'in-turn',
      lastActivityAt: AT,
      lastOutcome: null,
      driver: false,
    });
  });

  it.each([
    ['stored first', false],
    ['stored last', true],
  ])('of two settled turns that started together, the one that ended last counts (%s)', async (_, last) => {
    const ended = turn('t_b', { state: 'failed', ended_at: LATER, receipt: 'seen' });
    const earlier = turn('t_z', { state: 'abandoned' });
    for (const row of last ? [earlier, ended] : [ended, earlier]) await insertTurn(h.ctx.store.db, row);
    expect(await presence()).toEqual({
      state: 'idle',
      lastActivityAt: LATER,
      lastOutcome: 'failed',
      driver: true,
    });
  });

  it.each([
    ['stored first', false],
    ['stored last', true],
  ])('an open turn counts over a settled one that started with it (%s)', async (_, last) => {
    const open = turn('t_a', { state: 'open', ended_at: null });
    const settled = turn('t_z', { state: 'succeeded' });
    for (const row of last ? [settled, open] : [open, settled]) await insertTurn(h.ctx.store.db, row);
    expect((await presence()).state).toBe('in-turn');
  });

  it.each([
    ['stored first', false],
    ['stored last', true],
  ])('with start and end equal, the greater id decides (%s)', async (_, last) => {
    const high = turn('t_y', { state: 'failed' });
    const low = turn('t_b', { state: 'succeeded' });
    for (const row of last ? [low, high] : [high, low]) await insertTurn(h.ctx.store.db, row);
    expect((await presence()).lastOutcome).toBe('failed');
  });
});
