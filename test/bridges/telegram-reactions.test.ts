import { describe, expect, it } from 'vitest';
import { archiveMessages } from '../../src/host/inbox.js';
import { sendMessage } from '../../src/host/messages.js';
import { resolveAgent } from '../../src/host/principals.js';
import { resumeQueue } from '../../src/host/queue.js';
import { channelRead } from '../../src/host/reads.js';
import { beginTurn, endTurn, receivedInProcess } from '../../src/host/turns/index.js';
import { backendsUnderTest } from '../conformance/backend.js';
import { PHONE, useBridgeHarness } from './telegram-harness.js';

// Issue 24 item 4 on the phone: the person's own message carries its status as a reaction.
describe.each(backendsUnderTest())('Telegram reactions on %s', (backend) => {
  const h = useBridgeHarness(backend, 'telegram-reactions');
  /** The emoji on the phone's Telegram message `messageId` now (the last reaction set on it). */
  const reactionOn = (messageId: number) =>
    h.fake.reactions.filter((r) => r.chatId === String(PHONE) && r.messageId === messageId).at(-1)?.emoji;

  it('shows 👀 when the model received the message whole, then 👍 when the agent answered', async () => {
    await h.start();
    await h.pairPhone();
    const update = h.fake.pushMessage(PHONE, { text: 'please look at the build' });
    const [row] = await h.untilMessages(1);
    const helper = await resolveAgent(h.t.ctx, 'helper');
    // Stored only: no reaction (sent is not delivered).
    expect(reactionOn(update)).toBeUndefined();
    await beginTurn(h.t.ctx, helper);
    await receivedInProcess(h.t.ctx, await channelRead(h.t.ctx, helper, { unread: true, limit: 20 }));
    await h.fake.until(() => reactionOn(update)?.[0] === '👀', 20_000, 'the 👀 reaction');
    await sendMessage(h.t.ctx, helper, { to: 'owner', body: 'On it: green now.', replyTo: row?.id });
    await h.fake.until(() => reactionOn(update)?.[0] === '👍', 20_000, 'the 👍 reaction');
    // Archiving after the answer changes nothing: answered is where it stays.
    await archiveMessages(h.t.ctx, helper, [row?.id ?? '']);
    expect(h.fake.reactions.filter((r) => r.messageId === update).map((r) => r.emoji)).toEqual([
      ['👀'],
      ['👍'],
    ]);
  });

  it('a returned message gets 😢 and a reply line saying why; resumed and handled, 👌', async () => {
    await h.t.agent('turner', 'turn');
    await h.start();
    await h.pairPhone();
    h.fake.pushMessage(PHONE, { text: '/to turner' });
    const update = h.fake.pushMessage(PHONE, { text: 'summarise the log' });
    const [row] = await h.untilMessages(1);
    const turner = await resolveAgent(h.t.ctx, 'turner');
    const failing = await beginTurn(h.t.ctx, turner);
    await receivedInProcess(h.t.ctx, await channelRead(h.t.ctx, turner, { unread: true, limit: 20 }));
    await endTurn(h.t.ctx, turner, failing.id, { ok: false, kind: 'model_error', reason: 'overloaded' });
    await h.fake.until(() => reactionOn(update)?.[0] === '😢', 20_000, 'the 😢 reaction');
    await h.fake.until(
      () => h.textsTo(PHONE).some((t) => t.startsWith('turner did not handle this')),
      20_000,
      'the returned line',
    );
    expect(h.textsTo(PHONE)).toContain(
      'turner did not handle this: model_error: overloaded. It waits for you: resume or withdraw it in Sluice.',
    );
    await resumeQueue(h.t.ctx, h.t.owner, 'turner', row?.id ?? '');
    // Back to stored: the 😢 is taken away.
    await h.fake.until(() => reactionOn(update)?.length === 0, 20_000, 'the reaction removed');
    const ok = await beginTurn(h.t.ctx, turner);
    await receivedInProcess(h.t.ctx, await channelRead(h.t.ctx, turner, { unread: true, limit: 20 }));
    await endTurn(h.t.ctx, turner, ok.id, { ok: true });
    await h.fake.until(() => reactionOn(update)?.[0] === '👌', 20_000, 'the 👌 reaction');
  });

  it('a reaction Telegram refuses is logged and dropped; the next message is stored and reacted to', async () => {
    await h.start();
    await h.pairPhone();
    const lift = h.fake.refuse({
      method: 'setMessageReaction',
      code: 400,
      description: 'Bad Request: REACTION_INVALID',
    });
    const first = h.fake.pushMessage(PHONE, { text: 'one' });
    const [row] = await h.untilMessages(1);
    const helper = await resolveAgent(h.t.ctx, 'helper');
    await archiveMessages(h.t.ctx, helper, [row?.id ?? '']);
    await h.fake.until(
      () => h.fake.refused.some((r) => r.method === 'setMessageReaction'),
      20_000,
      'the refused reaction',
    );
    lift();
    const second = h.fake.pushMessage(PHONE, { text: 'two' });
    const rows = await h.untilMessages(2);
    await archiveMessages(h.t.ctx, helper, [rows[1]?.id ?? '']);
    await h.fake.until(() => reactionOn(second)?.[0] === '👌', 20_000, 'the second reaction');
    // The pump is one pass at a time: the refusal was logged before the second reaction was set,
    // and the refused one is not tried again (it counts as shown).
    expect(h.logs.find((l) => l.startsWith(`reaction on message ${row?.id}`))).toContain('REACTION_INVALID');
    expect(reactionOn(first)).toBeUndefined();
  });
});
