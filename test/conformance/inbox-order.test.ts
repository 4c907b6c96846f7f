import { afterEach, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { addPrincipal, type Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { tempHome } from '../support/host.js';
import { backendsUnderTest, dropSchema, freshSchemaUrl } from './backend.js';

/**
 * Inbox order is history order (docs/postgres.md, "Order"): an agent's inbox positions follow the
 * messages' seq, the order the channel's history shows, also for sends in flight at the same time
 * through several processes. On PostgreSQL a send takes its recipients' queue rows before its seq
 * (sluice_send, migration 013), so two sends sharing a recipient take seq and positions in one
 * order. Before that, a send could take its seq first and its positions second (issue 22).
 */
const AGENTS = ['a0', 'a1', 'a2'];
const SENDERS = 6;
const SENDS_PER_SENDER = Number(process.env.SLUICE_INBOX_ORDER_SENDS ?? 24);

describe.each(backendsUnderTest())('inbox order on %s', (backend) => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('equals history order for every agent, with concurrent keyed and plain sends through two processes', async () => {
    const { home, cleanup } = tempHome('sluice-inbox-order-');
    cleanups.push(cleanup);
    let db: string | undefined;
    if (backend === 'postgres') {
      const target = freshSchemaUrl('inboxorder');
      db = target.url;
      cleanups.push(() => dropSchema(target.schema));
    }
    const open = async () => {
      const ctx = await openHost({ home, db, durability: 'normal', pollMs: 10 });
      cleanups.push(() => ctx.store.close());
      return ctx;
    };
    const first = await open();
    await initHome(first);
    const senders: Principal[] = [];
    for (const name of AGENTS) await addPrincipal(first, { name, kind: 'agent' });
    for (let i = 0; i < SENDERS; i++)
      senders.push(await addPrincipal(first, { name: `p${i}`, kind: 'person' }));
    const owner = await first.store.db
      .selectFrom('principals')
      .selectAll()
      .where('name', '=', 'owner')
      .executeTakeFirstOrThrow();
    const channel = await createChannel(first, owner as unknown as Principal, {
      name: 'order',
      members: [...AGENTS, ...senders.map((s) => s.name)],
    });
    // Two processes' worth of stores (SQLite: one, since its writers share one file lock anyway).
    const contexts: HostContext[] = backend === 'postgres' ? [first, await open()] : [first];
    await Promise.all(
      senders.map(async (sender, s) => {
        const ctx = contexts[s % contexts.length] as HostContext;
        for (let i = 0; i < SENDS_PER_SENDER; i++) {
          // Keyed sends are transactions of their own; plain ones join a process's batch.
          const keyed = (s + i) % 2 === 0;
          await sendMessage(ctx, sender, {
            to: i % 3 === 0 ? (AGENTS[(s + i) % AGENTS.length] as string) : `#${channel.name}`,
            body: `${sender.name} ${i}`,
            ...(keyed ? { idempotencyKey: `${sender.name}/${i}` } : {}),
          });
        }
      }),
    );
    const agentIds = await first.store.db
      .selectFrom('principals')
      .select(['id', 'name'])
      .where('kind', '=', 'agent')
      .execute();
    let entries = 0;
    for (const agent of agentIds) {
      const rows = await first.store.db
        .selectFrom('inbox')
        .select(['position', 'message_seq'])
        .where('agent_id', '=', agent.id)
        .orderBy('position')
        .execute();
      entries += rows.length;
      const outOfOrder = rows.filter(
        (r, i) => i > 0 && Number(r.message_seq) < Number(rows[i - 1]?.message_seq),
      );
      expect(
        outOfOrder.map((r) => r.position),
        `${agent.name}: positions whose message is older than the one before`,
      ).toEqual([]);
    }
    expect(entries).toBeGreaterThan(SENDERS * SENDS_PER_SENDER);
  }, 120_000);
});
