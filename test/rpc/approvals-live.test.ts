// The `approval.changed` push on a queue subscription (docs/rpc.md, "Approvals"): a manager hears a
// request a driver made and its decision; a person who only shares a
// channel with the agent, subscribed to the same queue, hears nothing of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addAgentManager } from '../../src/host/agents/agent-managers.js';
import { requestApproval } from '../../src/host/approvals/requests.js';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { openServedHost, type RpcClient, type ServedHost } from './support.js';

let h: ServedHost;
let helper: Principal;
let manager: RpcClient;
let member: RpcClient;

beforeAll(async () => {
  h = await openServedHost();
  helper = await h.agent('helper');
  await h.person('bob');
  await h.person('meg');
  await addAgentManager(h.ctx, h.owner, 'helper', 'meg');
  // bob shares a channel with helper, and manages nothing.
  await createChannel(h.ctx, h.owner, { name: 'team', members: ['bob', 'helper'] });
  manager = await h.client('meg');
  member = await h.client('bob');
  await manager.ok('subscribe', { queues: ['helper'] });
  await member.ok('subscribe', { queues: ['helper'] });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('approval.changed', () => {
  it('reaches the manager when a request is made and when it is decided; never a mere member', async () => {
    const { row } = await requestApproval(
      h.ctx,
      helper,
      {
        client: 'claude',
        kind: 'tool',
        subject: { tool: 'Bash', input: { command: 'touch x' } },
        turnId: null,
      },
      60_000,
    );
    const made = await manager.waitFor(
      (n) => n.method === 'approval.changed' && n.params.approval.id === row.id,
    );
    expect(made.params).toMatchObject({
      agent: 'helper',
      approval: { id: row.id, status: 'pending', subject: { tool: 'Bash', input: { command: 'touch x' } } },
    });
    const decided = await manager.ok('approval.decide', { id: row.id, decision: 'deny', note: 'no' });
    expect(decided.approval).toMatchObject({ status: 'denied', decidedBy: 'meg', note: 'no' });
    await manager.waitFor(
      (n) =>
        n.method === 'approval.changed' &&
        n.params.approval.id === row.id &&
        n.params.approval.status === 'denied',
    );
    // The member's connection saw the queue's own pushes, but no approval.
    const again = await manager
      .ok('approval.decide', { id: row.id, decision: 'allow' })
      .catch((e: Error) => e);
    expect(String(again)).toMatch(/conflict|already/);
    expect(member.notifications.filter((n) => n.method.startsWith('approval.'))).toEqual([]);
    expect((await member.call('approval.list', { agent: 'helper' })).error?.data?.code).toBe('denied');
  });
});

describe('approval.changed on the channel list subscription (the page’s pending counts)', () => {
  it('reaches a manager subscribed to no queue of the agent; never a person who may not decide', async () => {
    const counts = await h.client('meg');
    const outsider = await h.client('bob');
    await counts.ok('subscribe', { channelList: true });
    await outsider.ok('subscribe', { channelList: true });
    const { row } = await requestApproval(
      h.ctx,
      helper,
      { client: 'codex', kind: 'command', subject: { command: 'touch y', cwd: '/w' }, turnId: null },
      60_000,
    );
    const made = await counts.waitFor(
      (n) => n.method === 'approval.changed' && n.params.approval.id === row.id,
    );
    expect(made.params).toMatchObject({ agent: 'helper', approval: { status: 'pending' } });
    await manager.ok('approval.decide', { id: row.id, decision: 'allow' });
    await counts.waitFor(
      (n) =>
        n.method === 'approval.changed' &&
        n.params.approval.id === row.id &&
        n.params.approval.status === 'allowed',
    );
    // bob's list heard the same commits (it is live) yet no approval of an agent it may not decide.
    expect(outsider.notifications.filter((n) => n.method.startsWith('approval.'))).toEqual([]);
  });
});
