import { afterEach, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { LIST_MEMBERS_SHOWN } from '../../src/host/channels/index.js';
import { sidebarPlaces } from '../../src/host/channels/read-marks.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS } from '../../src/surfaces/rpc/methods.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from './backend.js';
import { counted } from './statement-counter.js';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect reply JSON field by field.
type Json = any;

describe.each(backendsUnderTest())('a sidebar page on %s', (backend) => {
  let h: ConformanceHost | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  /** 31 groups of the owner's with the agent in each and one message of the agent's: unread. */
  async function seed(host: ConformanceHost): Promise<{ bot: Principal; ids: string[] }> {
    const bot = await host.agent('bot');
    const ids: string[] = [];
    for (let i = 0; i < 31; i++)
      ids.push((await createChannel(host.ctx, host.owner, { name: `room-${i}`, members: ['bot'] })).id);
    // Later than joining: a message in the millisecond the owner joined is not news.
    await new Promise((resolve) => setTimeout(resolve, 5));
    for (const [i, id] of ids.entries()) await sendMessage(host.ctx, bot, { to: id, body: `news ${i}` });
    return { bot, ids };
  }

  /** Statements of one `channel.list` and its reply. */
  async function list(host: ConformanceHost, params: Record<string, unknown>) {
    const c = counted(host.ctx);
    const reply = await handleRpcText(
      { ctx: c.ctx, principal: host.owner, limits: DEFAULT_RPC_LIMITS },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'channel.list', params }),
    );
    const parsed: Json = JSON.parse(reply ?? 'null');
    if (!parsed.result) throw new Error(`channel.list failed: ${reply}`);
    return { statements: c.statements(), channels: parsed.result.channels as Json[] };
  }

  it('lists 30 channels with members and unread counts in as many statements as 1', async () => {
    h = await openConformanceHost(backend, 'sidebarcount');
    await seed(h);
    for (const params of [{ order: 'activity' }, { order: 'activity', filter: 'room' }, {}]) {
      const one = await list(h, { ...params, limit: 1 });
      const thirty = await list(h, { ...params, limit: 30 });
      expect(one.channels).toHaveLength(1);
      expect(thirty.channels).toHaveLength(30);
      for (const row of thirty.channels) {
        expect(row.memberCount).toBe(2);
        expect(row.members.map((m: Json) => m.name)).toEqual(['bot', 'owner']);
        expect(row.unread).toBe(1);
      }
      expect(thirty.statements).toBe(one.statements);
      // By activity, the page is its one walk (a filter's scan would end long after 31 rooms).
      if (params.order === 'activity') expect(thirty.statements).toBe(1);
    }
  });

  it('reads 30 unread counts in as many statements as 1', async () => {
    h = await openConformanceHost(backend, 'sidebarunread');
    const { ids } = await seed(h);
    const c = counted(h.ctx);
    const one = await sidebarPlaces(c.ctx.store.db, h.owner.id, ids.slice(0, 1));
    const oneCount = c.statements();
    c.reset();
    const thirty = await sidebarPlaces(c.ctx.store.db, h.owner.id, ids.slice(0, 30));
    expect(one.size).toBe(1);
    expect([...thirty.values()].map((p) => p.unread)).toEqual(Array(30).fill(1));
    expect(c.statements()).toBe(oneCount);
  });

  it(`counts members in one statement more only when a row shows ${LIST_MEMBERS_SHOWN} of them`, async () => {
    h = await openConformanceHost(backend, 'sidebarbig');
    await seed(h);
    const base = await list(h, { order: 'activity', limit: 30 });
    const crowd = [];
    for (let i = 0; i < LIST_MEMBERS_SHOWN + 2; i++) crowd.push(`crowd-${String(i).padStart(2, '0')}`);
    for (const name of crowd) await h.agent(name);
    await createChannel(h.ctx, h.owner, { name: 'crowded', members: crowd });
    const page = await list(h, { order: 'activity', limit: 30 });
    const crowded = page.channels.find((c: Json) => c.name === 'crowded');
    expect(crowded.memberCount).toBe(LIST_MEMBERS_SHOWN + 3);
    expect(crowded.members).toHaveLength(LIST_MEMBERS_SHOWN);
    expect(crowded.members[0].name).toBe('crowd-00');
    expect(page.statements).toBe(base.statements + 1);
  });
});
