import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/core/fragment.js';
import { createChannel, removeMember } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { readProjection, sendMessage } from '../../src/host/messages/messages.js';
import { projectionText } from '../../src/host/messages/projection.js';
import { archiveMessages, listInbox } from '../../src/host/queue/inbox.js';
import { isDeliverable, queueSummary, resumeQueue, withdrawMessage } from '../../src/host/queue/queue.js';
import { beginTurn, endTurn, recordCoverage } from '../../src/host/turns/index.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { openTestHost, type TestHost } from '../support/host.js';

let t: TestHost;
beforeEach(async () => {
  t = await openTestHost();
});
afterEach(async () => {
  await t.close();
});

async function coverWhole(agent: Principal, messageId: string) {
  const row = await findMessageById(t.ctx.store.db, messageId);
  const text = projectionText(await readProjection(t.ctx, agent, messageId));
  await t.ctx.store.transaction((trx) =>
    recordCoverage(trx, agent.id, [
      { messageSeq: row!.seq, sha256: sha256Hex(text), offset: 0, end: text.length, total: text.length },
    ]),
  );
}

/**
 * Counters must always equal what the rows say, of the channels the agent is still in: entries of
 * a channel it left stay pending but are hidden until it rejoins (docs/mcp.md, inbox_status).
 */
async function expectCountersMatchRows(agent: Principal) {
  const summary = await queueSummary(t.ctx.store.db, agent);
  const rows = await t.ctx.store.db
    .selectFrom('inbox')
    .innerJoin('memberships', (join) =>
      join
        .onRef('memberships.channel_id', '=', 'inbox.channel_id')
        .onRef('memberships.principal_id', '=', 'inbox.agent_id'),
    )
    .select(['inbox.state', 'inbox.source'])
    .where('inbox.agent_id', '=', agent.id)
    .where('memberships.left_at', 'is', null)
    .execute();
  const pending = rows.filter((r) => r.state === 'waiting' || r.state === 'returned');
  expect(summary.total).toBe(pending.length);
  expect(summary.counts.person).toBe(pending.filter((r) => r.source === 'person').length);
  expect(summary.counts.agent).toBe(pending.filter((r) => r.source === 'agent').length);
}

describe('send fan-out', () => {
  it('gives every agent member except the author one inbox entry, and people none', async () => {
    const a = await t.agent('a');
    const b = await t.agent('b');
    const alice = await t.person('alice');
    await createChannel(t.ctx, t.owner, { name: 'team', members: ['a', 'b', 'alice'] });
    await sendMessage(t.ctx, a, { to: '#team', body: 'from a' });
    await sendMessage(t.ctx, alice, { to: '#team', body: 'from alice' });
    expect((await listInbox(t.ctx, a)).map((r) => r.projection.body)).toEqual(['from alice']);
    expect((await listInbox(t.ctx, b)).map((r) => [r.projection.body, r.entry.source])).toEqual([
      ['from a', 'agent'],
      ['from alice', 'person'],
    ]);
    const rows = await t.ctx.store.db.selectFrom('inbox').select('agent_id').execute();
    expect(rows.every((r) => r.agent_id !== alice.id && r.agent_id !== t.owner.id)).toBe(true);
    await expectCountersMatchRows(b);
  });

  it('refuses a sender who is not a member, storing nothing', async () => {
    await t.agent('a');
    const stranger = await t.person('stranger');
    await createChannel(t.ctx, t.owner, { name: 'team', members: ['a'] });
    await expect(sendMessage(t.ctx, stranger, { to: '#team', body: 'hi' })).rejects.toMatchObject({
      code: 'not_member',
    });
    expect(await t.ctx.store.db.selectFrom('messages').selectAll().execute()).toEqual([]);
  });
});

describe('turn settlement', () => {
  it('marks exactly the completely covered messages handled on success', async () => {
    const bot = await t.agent('bot', 'turn');
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push((await sendMessage(t.ctx, t.owner, { to: 'bot', body: `m${i}` })).message_id);
    const turn = await beginTurn(t.ctx, bot);
    await coverWhole(bot, ids[0]!);
    await coverWhole(bot, ids[2]!);
    const settled = await endTurn(t.ctx, bot, turn.id, { ok: true });
    expect(settled.handled).toEqual([ids[0], ids[2]]);
    expect((await listInbox(t.ctx, bot)).map((r) => r.projection.message_id)).toEqual([ids[1]]);
    await expectCountersMatchRows(bot);
  });

  it('returns covered messages on failure, blocks dispatch, and resume puts them back first', async () => {
    const bot = await t.agent('bot', 'turn');
    const first = (await sendMessage(t.ctx, t.owner, { to: 'bot', body: 'one' })).message_id;
    await sendMessage(t.ctx, t.owner, { to: 'bot', body: 'two' });
    const turn = await beginTurn(t.ctx, bot);
    await coverWhole(bot, first);
    const settled = await endTurn(t.ctx, bot, turn.id, {
      ok: false,
      kind: 'model_error',
      reason: 'overloaded',
    });
    expect(settled.returned).toEqual([first]);
    const summary = await queueSummary(t.ctx.store.db, bot);
    expect(summary).toMatchObject({ total: 2, blockingReturnedMessageId: first, resumeAvailable: true });
    expect(await isDeliverable(t.ctx.store.db, bot)).toBe(false);
    await resumeQueue(t.ctx, t.owner, 'bot', first);
    expect(await isDeliverable(t.ctx.store.db, bot)).toBe(true);
    expect((await listInbox(t.ctx, bot))[0]?.projection.message_id).toBe(first);
    await expectCountersMatchRows(bot);
  });

  it('consumes nothing for a peek, an abandoned turn, or an explicit-mode agent', async () => {
    const bot = await t.agent('bot', 'turn');
    const id = (await sendMessage(t.ctx, t.owner, { to: 'bot', body: 'x' })).message_id;
    await coverWhole(bot, id); // peek: no open turn
    const stale = await beginTurn(t.ctx, bot);
    await coverWhole(bot, id);
    const fresh = await beginTurn(t.ctx, bot); // abandons `stale`
    await expect(endTurn(t.ctx, bot, stale.id, { ok: true })).rejects.toMatchObject({ code: 'conflict' });
    await endTurn(t.ctx, bot, fresh.id, { ok: true });
    expect((await listInbox(t.ctx, bot)).length).toBe(1);

    const explicit = await t.agent('explicit');
    const id2 = (await sendMessage(t.ctx, t.owner, { to: 'explicit', body: 'y' })).message_id;
    const turn = await beginTurn(t.ctx, explicit);
    await coverWhole(explicit, id2);
    expect((await endTurn(t.ctx, explicit, turn.id, { ok: true })).handled).toEqual([]);
    expect((await listInbox(t.ctx, explicit)).length).toBe(1);
  });

  it('leaves a message pending when it was edited after the model read it', async () => {
    const bot = await t.agent('bot', 'turn');
    const id = (await sendMessage(t.ctx, t.owner, { to: 'bot', body: 'v1' })).message_id;
    const turn = await beginTurn(t.ctx, bot);
    await coverWhole(bot, id);
    await editMessage(t.ctx, t.owner, id, { body: 'v2' });
    expect((await endTurn(t.ctx, bot, turn.id, { ok: true })).handled).toEqual([]);
    expect((await listInbox(t.ctx, bot))[0]?.projection.body).toBe('v2');
  });

  it('counts a fragment chain only as the contiguous prefix read in this turn', async () => {
    const bot = await t.agent('bot', 'turn');
    const id = (await sendMessage(t.ctx, t.owner, { to: 'bot', body: 'z'.repeat(100) })).message_id;
    const row = await findMessageById(t.ctx.store.db, id);
    const text = projectionText(await readProjection(t.ctx, bot, id));
    const sha = sha256Hex(text);
    const slice = (offset: number, end: number) =>
      t.ctx.store.transaction((trx) =>
        recordCoverage(trx, bot.id, [{ messageSeq: row!.seq, sha256: sha, offset, end, total: text.length }]),
      );
    let turn = await beginTurn(t.ctx, bot);
    await slice(0, 50);
    await endTurn(t.ctx, bot, turn.id, { ok: true });
    turn = await beginTurn(t.ctx, bot);
    await slice(50, text.length); // resuming a chain begun in an earlier turn does not count
    expect((await endTurn(t.ctx, bot, turn.id, { ok: true })).handled).toEqual([]);
    turn = await beginTurn(t.ctx, bot);
    await slice(0, 50);
    await slice(50, text.length);
    expect((await endTurn(t.ctx, bot, turn.id, { ok: true })).handled).toEqual([id]);
  });
});

describe('archive', () => {
  it('is idempotent with one receipt per id and refuses unknown ids without changing anything', async () => {
    const bot = await t.agent('bot');
    const id = (await sendMessage(t.ctx, t.owner, { to: 'bot', body: 'a' })).message_id;
    await expect(archiveMessages(t.ctx, bot, [id, 'nope'])).rejects.toMatchObject({ code: 'not_found' });
    expect((await listInbox(t.ctx, bot)).length).toBe(1);
    const [r1] = await archiveMessages(t.ctx, bot, [id]);
    const [r2, r3] = await archiveMessages(t.ctx, bot, [id, id]);
    expect(r1?.already).toBe(false);
    expect(r2).toEqual({ ...r1, already: true });
    expect(r3).toEqual({ ...r1, already: true });
    expect(await t.ctx.store.db.selectFrom('receipts').selectAll().execute()).toHaveLength(1);
  });
});

describe('queue counters', () => {
  it('always equal the rows after random sends, archives, withdrawals, turns and leaves', async () => {
    const bot = await t.agent('bot', 'turn');
    const peer = await t.agent('peer');
    await createChannel(t.ctx, t.owner, { name: 'room', members: ['bot', 'peer'] });
    const sent: string[] = [];
    type Op =
      | { kind: 'send'; fromPeer: boolean; dm: boolean }
      | { kind: 'archive' | 'withdraw' | 'cover'; pick: number }
      | { kind: 'turn'; ok: boolean }
      | { kind: 'leave' };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('send' as const), fromPeer: fc.boolean(), dm: fc.boolean() }),
      fc.record({
        kind: fc.constantFrom('archive' as const, 'withdraw' as const, 'cover' as const),
        pick: fc.nat(),
      }),
      fc.record({ kind: fc.constant('turn' as const), ok: fc.boolean() }),
      fc.constant({ kind: 'leave' as const }),
    );
    let turnId: string | undefined;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 12 }), async (ops) => {
        for (const o of ops) {
          try {
            if (o.kind === 'send') {
              const from = o.fromPeer ? peer : t.owner;
              sent.push(
                (await sendMessage(t.ctx, from, { to: o.dm ? 'bot' : '#room', body: `b${sent.length}` }))
                  .message_id,
              );
            } else if (o.kind === 'turn') {
              if (turnId)
                await endTurn(t.ctx, bot, turnId, o.ok ? { ok: true } : { ok: false, kind: 'model_error' });
              turnId = (await beginTurn(t.ctx, bot)).id;
            } else if (o.kind === 'leave') {
              await removeMember(
                t.ctx,
                t.owner,
                (
                  await t.ctx.store.db
                    .selectFrom('channels')
                    .select('id')
                    .where('name', '=', 'room')
                    .executeTakeFirstOrThrow()
                ).id,
                'bot',
              );
            } else if (sent.length > 0) {
              const id = sent[o.pick % sent.length]!;
              if (o.kind === 'archive') await archiveMessages(t.ctx, bot, [id]);
              else if (o.kind === 'withdraw') await withdrawMessage(t.ctx, t.owner, 'bot', id);
              else await coverWhole(bot, id);
            }
          } catch (err) {
            // Refusals (already withdrawn, left channel, …) are fine; they must change nothing.
            expect((err as { code?: string }).code).toBeDefined();
          }
          await expectCountersMatchRows(bot);
        }
      }),
      { numRuns: 15 },
    );
  });
});
