// Pending counts say what the agent may read now (I6): after any mix of joins, leaves (its own or
// a removal), sends, archives and returned cards, every surface that counts pending messages —
// the delivery envelope, the steer's count, inbox_status, the hook's SQLite reader, queue.summary
// and whether the queue may dispatch — agrees with the entries pending in the channels it is a
// member of now. Before, the queue's counters also counted entries of channels it had left: the
// harness said "3 pending" with nothing to read, and a returned card there blocked the queue.
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createChannel, leaveChannel, removeMember } from '../../src/host/channels/channels.js';
import { nowIso } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { deliveryFor, metadataNoticeFor } from '../../src/host/queue/delivery.js';
import { archiveMessages, transitionEntry } from '../../src/host/queue/inbox.js';
import { isDeliverable, queueSummary, resumeQueue } from '../../src/host/queue/queue.js';
import { inboxStatus } from '../../src/host/reads/inbox-status.js';
import { findInboxEntry } from '../../src/store/ops/inbox.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { openPendingReader } from '../../src/surfaces/hooks/sqlite-pending.js';
import { backendsUnderTest, conformanceHostSeries } from '../conformance/backend.js';
import { openTestHost, type TestHost } from '../support/host.js';

let t: TestHost;
let run = 0;
beforeAll(async () => {
  t = await openTestHost();
});
afterAll(async () => t?.close());

const CHANNELS = 3;

type Op =
  | { kind: 'join'; channel: number }
  | { kind: 'leave'; channel: number; removed: boolean }
  | { kind: 'send'; channel: number; byPeer: boolean }
  | { kind: 'archive'; pick: number }
  | { kind: 'return'; pick: number }
  | { kind: 'resume'; pick: number };

const channel = fc.nat({ max: CHANNELS - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: channel.map<Op>((c) => ({ kind: 'join', channel: c })), weight: 2 },
  {
    arbitrary: fc
      .tuple(channel, fc.boolean())
      .map<Op>(([c, removed]) => ({ kind: 'leave', channel: c, removed })),
    weight: 2,
  },
  {
    arbitrary: fc
      .tuple(channel, fc.boolean())
      .map<Op>(([c, byPeer]) => ({ kind: 'send', channel: c, byPeer })),
    weight: 4,
  },
  { arbitrary: fc.nat().map<Op>((pick) => ({ kind: 'archive', pick })), weight: 1 },
  { arbitrary: fc.nat().map<Op>((pick) => ({ kind: 'return', pick })), weight: 2 },
  { arbitrary: fc.nat().map<Op>((pick) => ({ kind: 'resume', pick })), weight: 1 },
);

/** The test's own account of the agent's inbox, in queue order, and of its memberships. */
interface Model {
  members: Set<number>;
  entries: { id: string; channel: number; state: 'waiting' | 'returned' | 'archived'; byPeer: boolean }[];
}

function readable(m: Model) {
  return m.entries.filter((e) => e.state !== 'archived' && m.members.has(e.channel));
}

it('every pending count equals the entries the agent may read now', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
      run++;
      const bot = await t.agent(`bot${run}`);
      const peer = await t.agent(`peer${run}`);
      const names = Array.from({ length: CHANNELS }, (_, i) => `#r${run}c${i}`);
      for (const name of names) await createChannel(t.ctx, t.owner, { name, members: [bot.name, peer.name] });
      const m: Model = { members: new Set([0, 1, 2]), entries: [] };
      let sent = 0;

      const setState = async (id: string, to: 'returned') => {
        await t.ctx.store.transaction(async (trx) => {
          const message = await findMessageById(trx, id);
          const entry = message && (await findInboxEntry(trx, bot.id, message.seq));
          if (!entry) throw new Error(`no entry for ${id}`);
          await transitionEntry(trx, entry, to, nowIso(t.ctx), { failure_kind: 'crash' });
        });
      };

      for (const o of ops) {
        if (o.kind === 'join' && !m.members.has(o.channel)) {
          await addMember(t.ctx, t.owner, names[o.channel] as string, bot.name);
          m.members.add(o.channel);
        } else if (o.kind === 'leave' && m.members.has(o.channel)) {
          if (o.removed) await removeMember(t.ctx, t.owner, names[o.channel] as string, bot.name);
          else await leaveChannel(t.ctx, bot, names[o.channel] as string);
          m.members.delete(o.channel);
        } else if (o.kind === 'send') {
          const sender: Principal = o.byPeer ? peer : t.owner;
          const sentMessage = await sendMessage(t.ctx, sender, {
            to: names[o.channel] as string,
            body: `m${++sent}`,
          });
          if (m.members.has(o.channel))
            m.entries.push({
              id: sentMessage.message_id,
              channel: o.channel,
              state: 'waiting',
              byPeer: o.byPeer,
            });
        } else if (o.kind === 'archive' || o.kind === 'return') {
          const choices = readable(m).filter((e) => o.kind === 'archive' || e.state === 'waiting');
          const entry = choices[o.pick % Math.max(1, choices.length)];
          if (!entry) continue;
          if (o.kind === 'archive') {
            await archiveMessages(t.ctx, bot, [entry.id]);
            entry.state = 'archived';
          } else {
            await setState(entry.id, 'returned');
            entry.state = 'returned';
          }
        } else if (o.kind === 'resume') {
          const choices = readable(m).filter((e) => e.state === 'returned');
          const entry = choices[o.pick % Math.max(1, choices.length)];
          if (!entry) continue;
          await resumeQueue(t.ctx, bot, bot.name, entry.id);
          entry.state = 'waiting';
        }

        const visible = readable(m);
        const returned = visible.filter((e) => e.state === 'returned');
        const fromPeer = visible.filter((e) => e.byPeer).length;
        const label = JSON.stringify(ops);

        const delivery = await deliveryFor(t.ctx, bot);
        expect(delivery.totalPending, label).toBe(visible.length);
        expect(delivery.included, label).toEqual(visible.map((e) => e.id));
        const notice = await metadataNoticeFor(t.ctx, bot);
        if (visible.length === 0) expect(notice, label).toBe('');
        else expect(notice, label).toMatch(new RegExp(`^\\[sluice\\] ${visible.length} pending message`));

        const status = JSON.parse((await inboxStatus(t.ctx, bot)).text) as {
          pending: number;
          returned: number;
        };
        expect([status.pending, status.returned], label).toEqual([visible.length, returned.length]);

        const reader = openPendingReader(join(t.home, 'sluice.db'));
        try {
          expect(reader?.pendingSlice(bot.name, 100).totalPending, label).toBe(visible.length);
        } finally {
          reader?.close();
        }

        const summary = await queueSummary(t.ctx.store.db, bot);
        expect(summary.total, label).toBe(visible.length);
        expect(summary.counts, label).toEqual({
          person: visible.length - fromPeer,
          agent: fromPeer,
          unknown: 0,
        });
        // Only a returned card the agent may read blocks its queue (and is the one to resume).
        expect(summary.blockingReturnedMessageId, label).toBe(returned[0]?.id ?? null);
        expect(summary.resumeAvailable, label).toBe(returned.length > 0);
        expect(await isDeliverable(t.ctx.store.db, bot), label).toBe(returned.length === 0);
      }
    }),
    { numRuns: 25 },
  );
}, 240_000);

describe.each(backendsUnderTest())('a channel the agent left (%s)', (backend) => {
  const hosts = conformanceHostSeries(backend, 'pending_left');
  afterAll(() => hosts.release());

  it('hides its pending entries from the counts, and its returned card no longer blocks the queue until a rejoin', async () => {
    const h = await hosts.open();
    try {
      const bot = await h.agent('bot');
      await createChannel(h.ctx, h.owner, { name: 'ops', members: ['bot'] });
      const first = await sendMessage(h.ctx, h.owner, { to: '#ops', body: 'one' });
      await sendMessage(h.ctx, h.owner, { to: '#ops', body: 'two' });
      await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'direct' });
      await h.ctx.store.transaction(async (trx) => {
        const message = await findMessageById(trx, first.message_id);
        const entry = message && (await findInboxEntry(trx, bot.id, message.seq));
        if (!entry) throw new Error('no entry');
        await transitionEntry(trx, entry, 'returned', nowIso(h.ctx), { failure_kind: 'crash' });
      });
      expect(await isDeliverable(h.ctx.store.db, bot)).toBe(false);

      await leaveChannel(h.ctx, bot, '#ops');
      const summary = await queueSummary(h.ctx.store.db, bot);
      expect([summary.total, summary.counts.person, summary.blockingReturnedMessageId]).toEqual([1, 1, null]);
      const status = JSON.parse((await inboxStatus(h.ctx, bot)).text) as {
        pending: number;
        returned: number;
      };
      expect([status.pending, status.returned]).toEqual([1, 0]);
      expect((await deliveryFor(h.ctx, bot)).totalPending).toBe(1);
      // The DM is delivered: the returned card of #ops, which the agent cannot read, blocks nothing.
      expect(await isDeliverable(h.ctx.store.db, bot)).toBe(true);

      await addMember(h.ctx, h.owner, '#ops', 'bot');
      expect((await queueSummary(h.ctx.store.db, bot)).total).toBe(3);
      expect(await isDeliverable(h.ctx.store.db, bot)).toBe(false);
    } finally {
      await h.close();
    }
  });
});
