// Issue 23 item 3, "the owner sees what the owner made": the owner and the people who manage an
// agent open its queue without sharing a channel with it, and the agent is listed for them
// (`principal.list {managed: true}`), on both backends. What they see of a queue without a shared
// channel is its counts and state, never a card, a body or a message id (I6). An outsider, a
// person in other channels and a removed manager are still refused, and nothing changes.
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addAgentManager, removeAgentManager } from '../../src/host/agents/agent-managers.js';
import { createChannel } from '../../src/host/channels/channels.js';
import { canWatchQueue, queueReaderIds } from '../../src/host/identity/access.js';
import { addPrincipal, type Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS, type SubscriptionControl } from '../../src/surfaces/rpc/methods.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect reply JSON field by field.
type Json = any;

describe.each(backendsUnderTest())('the agents a person manages (%s)', (backend) => {
  let h: ConformanceHost;
  const hosts = conformanceHostSeries(backend, 'managed');
  afterAll(() => hosts.release());
  const subscribed: { queues: string[] }[] = [];
  const subscriptions: SubscriptionControl = {
    subscribe: (queues) => subscribed.push({ queues: queues.map((q) => q.name) }),
    unsubscribe: () => undefined,
    subscribeChannelList: async () => undefined,
    unsubscribeChannelList: () => undefined,
    list: () => ({ queues: [], channels: [], channelList: false }),
  };

  let people: Record<'alice' | 'meg' | 'mallory' | 'nina' | 'rita', Principal>;
  let secret: string;
  let helper: Principal;
  beforeEach(async () => {
    h = await hosts.open();
    subscribed.length = 0;
    // helper was added by the owner (as `sluice agent add` does) and shares no channel with it.
    helper = await h.agent('helper');
    const alice = await h.person('alice');
    const meg = await h.person('meg');
    const mallory = await h.person('mallory');
    const nina = await h.person('nina');
    const rita = await h.person('rita');
    people = { alice, meg, mallory, nina, rita };
    // meg added her own agent from a device or the CLI: she manages it (host/agents/agent-managers.ts).
    await addPrincipal(h.ctx, { name: 'megbot', kind: 'agent', managerId: meg.id });
    await addAgentManager(h.ctx, h.owner, 'helper', 'meg');
    await addAgentManager(h.ctx, h.owner, 'helper', 'rita');
    await removeAgentManager(h.ctx, h.owner, 'helper', 'rita');
    await createChannel(h.ctx, alice, { name: 'elsewhere', members: ['nina'] });
    secret = (await sendMessage(h.ctx, alice, { to: 'helper', body: 'alice only, in the DM' })).message_id;
  });
  afterEach(async () => {
    await h.close();
  });

  async function rpc(principal: Principal, method: string, params: unknown): Promise<Json> {
    const reply = await handleRpcText(
      { ctx: h.ctx, principal, limits: DEFAULT_RPC_LIMITS, subscriptions },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    );
    return JSON.parse(reply ?? 'null');
  }

  async function managedNames(principal: Principal): Promise<string[]> {
    const names: string[] = [];
    let after: string | null = null;
    do {
      const reply: Json = await rpc(principal, 'principal.list', {
        managed: true,
        limit: 1,
        ...(after === null ? {} : { after }),
      });
      expect(reply.error, JSON.stringify(reply.error)).toBeUndefined();
      for (const p of reply.result.principals) {
        expect(p.kind).toBe('agent');
        names.push(p.name);
      }
      after = reply.result.nextAfter;
    } while (after !== null);
    return names;
  }

  it('lists for each person the agents they manage: every agent for the owner, none for others', async () => {
    expect(await managedNames(h.owner)).toEqual(['helper', 'megbot']);
    expect(await managedNames(people.meg)).toEqual(['helper', 'megbot']);
    for (const who of ['alice', 'mallory', 'nina', 'rita'] as const)
      expect(await managedNames(people[who]), who).toEqual([]);
    // An agent manages itself (it may pause its own queue), and nothing else.
    expect(await managedNames(await h.agent('solo'))).toEqual(['solo']);
  });

  it('the owner and a manager open the queue with no shared channel: counts, never a card or an id', async () => {
    for (const who of [h.owner, people.meg]) {
      const summary = (await rpc(who, 'queue.summary', { agent: 'helper' })).result;
      expect(summary, who.name).toMatchObject({ agent: 'helper', total: 1, canPause: true });
      expect(summary.newestPersonMessageId, who.name).toBeNull();
      const page = (await rpc(who, 'queue.page', { agent: 'helper' })).result;
      expect(page.status).toBe('page');
      expect(page.rows).toEqual([]);
      const read = await rpc(who, 'queue.read', { agent: 'helper', messageId: secret });
      expect(read.result).toBeUndefined();
      expect(JSON.stringify(read)).not.toContain('alice only');
      expect((await rpc(who, 'subscribe', { queues: ['helper'] })).error).toBeUndefined();
    }
    expect(subscribed).toEqual([{ queues: ['helper'] }, { queues: ['helper'] }]);
  });

  it('an outsider, a person in other channels and a removed manager are refused, and nothing changes', async () => {
    const before = await snapshotStore(h.ctx);
    for (const who of [people.mallory, people.nina, people.rita]) {
      for (const [method, params] of [
        ['queue.summary', { agent: 'helper' }],
        ['queue.page', { agent: 'helper' }],
        ['queue.read', { agent: 'helper', messageId: secret }],
        ['queue.pause', { agent: 'helper' }],
        ['subscribe', { queues: ['helper'] }],
      ] as const) {
        const reply = await rpc(who, method, params);
        expect(reply.result, `${who.name} ${method}`).toBeUndefined();
        expect(reply.error?.data?.code, `${who.name} ${method}`).toBe('denied');
        expect(JSON.stringify(reply)).not.toContain('alice only');
      }
    }
    expect(subscribed).toEqual([]);
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('live pushes follow the same rule: managers and the owner hear, a removed manager stops', async () => {
    const readers = await queueReaderIds(h.ctx.store.db, helper.id);
    expect(canWatchQueue(h.owner, helper.id, readers)).toBe(true);
    expect(canWatchQueue(people.meg, helper.id, readers)).toBe(true);
    expect(canWatchQueue(people.alice, helper.id, readers)).toBe(true);
    for (const who of [people.mallory, people.nina, people.rita])
      expect(canWatchQueue(who, helper.id, readers), who.name).toBe(false);
    await removeAgentManager(h.ctx, h.owner, 'helper', 'meg');
    const after = await queueReaderIds(h.ctx.store.db, helper.id);
    expect(canWatchQueue(people.meg, helper.id, after)).toBe(false);
    expect((await rpc(people.meg, 'queue.summary', { agent: 'helper' })).error?.data?.code).toBe('denied');
  });
});
