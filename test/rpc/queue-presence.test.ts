import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sendMessage } from '../../src/host/messages.js';
import type { Principal } from '../../src/host/principals.js';
import { abandonTurn, beginTurn, endTurn } from '../../src/host/turns.js';
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

  it('is not shown to someone who may not see the queue', async () => {
    await host.person('mallory');
    const outsider = await host.client('mallory');
    const reply = await outsider.call('queue.summary', { agent: 'helper' });
    expect(reply.result).toBeUndefined();
    expect(reply.error?.message).toMatch(/only helper or a person/);
  });
});
