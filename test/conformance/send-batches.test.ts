import { sql } from 'kysely';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Channel, createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendToChannel } from '../../src/host/messages/messages.js';
import { findMessagesBySeqs } from '../../src/store/ops/messages.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from './backend.js';

// PostgreSQL's group commit (src/store/postgres/send-batch.ts, migration 011_send_batches): the
// plain sends a host has waiting commit in one call of sluice_send_many, one transaction.
describe.runIf(backendsUnderTest().includes('postgres'))('batched sends on postgres', () => {
  let h: ConformanceHost;
  let bots: Principal[];
  let team: Channel;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries('postgres', 'batch');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
    bots = [await h.agent('bot0'), await h.agent('bot1')];
    team = await createChannel(h.ctx, h.owner, { name: 'team', members: ['bot0', 'bot1'] });
  });
  afterEach(async () => {
    await h.close();
  });

  /** The transactions (xids) that logged these messages' events. */
  async function transactionsOf(messageIds: readonly string[]): Promise<number> {
    const rows = await sql<{ n: number }>`
      select count(distinct xid)::int as n from events where message_id in (${sql.join(messageIds)})`.execute(
      h.ctx.store.db,
    );
    return rows.rows[0]?.n ?? 0;
  }

  async function positions(agent: Principal): Promise<{ position: number; seq: number }[]> {
    const rows = await h.ctx.store.db
      .selectFrom('inbox')
      .select(['position', 'message_seq'])
      .where('agent_id', '=', agent.id)
      .orderBy('position')
      .execute();
    return rows.map((r) => ({ position: Number(r.position), seq: Number(r.message_seq) }));
  }

  it('commits sends that arrive together in one transaction, FIFO, each with its own seq and exact text', async () => {
    const bodies = Array.from({ length: 8 }, (_, i) => `hello ${i} \u0000 \ufdd0 \ufdd00 ${'é'.repeat(i)}`);
    const sent = await Promise.all(bodies.map((body) => sendToChannel(h.ctx, h.owner, team, { body })));
    expect(new Set(sent.map((s) => s.seq)).size).toBe(8);
    expect(await transactionsOf(sent.map((s) => s.message_id))).toBe(1);
    const rows = await findMessagesBySeqs(
      h.ctx.store.db,
      sent.map((s) => s.seq),
    );
    expect(rows.map((r) => r.body)).toEqual(bodies);
    for (const bot of bots) {
      const entries = await positions(bot);
      expect(entries.map((e) => e.position)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      // FIFO: positions follow the order the messages were stored in.
      expect(entries.map((e) => e.seq)).toEqual([...entries.map((e) => e.seq)].sort((a, b) => a - b));
    }
    const queue = await h.ctx.store.db
      .selectFrom('queues')
      .selectAll()
      .where('agent_id', '=', bots[0]?.id as string)
      .executeTakeFirstOrThrow();
    expect([Number(queue.waiting), Number(queue.next_position)]).toEqual([8, 9]);
  });

  it('refuses a non-member inside a batch alone: the others commit, it stores nothing', async () => {
    const outsider = await h.person('outsider');
    const outcomes = await Promise.allSettled([
      sendToChannel(h.ctx, h.owner, team, { body: 'one' }),
      sendToChannel(h.ctx, outsider, team, { body: 'let me in' }),
      sendToChannel(h.ctx, h.owner, team, { body: 'two' }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason.code).toBe('not_member');
    const ids = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.message_id] : []));
    expect(await transactionsOf(ids)).toBe(1);
    const bodies = await h.ctx.store.db.selectFrom('messages').select('body').execute();
    expect(bodies.map((b) => b.body).sort()).toEqual(['one', 'two']);
    for (const bot of bots) expect((await positions(bot)).map((e) => e.position)).toEqual([1, 2]);
  });

  it('undoes a send that fails inside the call alone: no position, counter or event of it remains', async () => {
    const first = await sendToChannel(h.ctx, h.owner, team, { body: 'first' });
    const at = '2030-01-01T00:00:00.000Z';
    const row = (id: string) => [
      id,
      team.id,
      h.owner.id,
      at,
      `body of ${id}`,
      10,
      null,
      null,
      '[]',
      '[]',
      'person',
    ];
    // The middle send reuses the first message's id: a unique violation inside its own block.
    const sends = [row('m_batch_a'), row(first.message_id), row('m_batch_b')];
    const columns = Array.from({ length: 11 }, (_, c) => sends.map((s) => s[c]));
    const result = await sql<{ seq: number | null; error_code: string | null }>`
      select seq, error_code from sluice_send_many(${sql.join(columns.map((c) => sql`${c}`))})`.execute(
      h.ctx.store.db,
    );
    expect(result.rows.map((r) => r.error_code)).toEqual([null, '23505', null]);
    expect(result.rows[0]?.seq).not.toBeNull();
    expect(result.rows[1]?.seq).toBeNull();
    for (const bot of bots) expect((await positions(bot)).map((e) => e.position)).toEqual([1, 2, 3]);
    const events = await h.ctx.store.db
      .selectFrom('events')
      .select('message_id')
      .where('kind', '=', 'message.created')
      .execute();
    expect(events.map((e) => e.message_id).sort()).toEqual(
      [first.message_id, 'm_batch_a', 'm_batch_b'].sort(),
    );
    const queue = await h.ctx.store.db
      .selectFrom('queues')
      .selectAll()
      .where('agent_id', '=', bots[1]?.id as string)
      .executeTakeFirstOrThrow();
    expect([Number(queue.waiting), Number(queue.pending_person), Number(queue.next_position)]).toEqual([
      3, 3, 4,
    ]);
  });
});
