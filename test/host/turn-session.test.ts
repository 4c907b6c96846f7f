// The host's turn protocol (src/host/turns): a driven turn from begin to end without any client —
// what the first slice covers, when a steer counts, what the client's sightings confirm, how an
// abandoned turn treats its dispatch attempts, the waiting-on-a-person phase, and the dispatcher.
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { pauseQueue } from '../../src/host/queue/queue.js';
import { dispatchAttemptsOf } from '../../src/host/turns/attempts.js';
import { carriedWhole } from '../../src/host/turns/carried.js';
import {
  beginTurn,
  openTurnOfAgent,
  TurnDispatcher,
  type TurnReport,
  TurnSession,
} from '../../src/host/turns/index.js';
import { renderDispatch } from '../../src/host/turns/slices.js';
import { pendingIds } from '../mcp/support.js';
import { openTestHost, type TestHost } from '../support/host.js';

let h: TestHost;
let bot: Principal;
beforeEach(async () => {
  h = await openTestHost();
  bot = await h.agent('bot', 'turn');
});
afterEach(async () => h.close());

const send = async (body: string) => (await sendMessage(h.ctx, h.owner, { to: 'bot', body })).message_id;
const begin = async (maxMessages?: number) => {
  const session = await TurnSession.begin(h.ctx, bot, {
    sessionKey: 'test:1',
    limits: maxMessages === undefined ? undefined : { maxMessages },
  });
  if (!session) throw new Error('expected a turn');
  return session;
};
const stateOf = async (id: string) =>
  (
    await h.ctx.store.db
      .selectFrom('inbox')
      .select('state')
      .where('agent_id', '=', bot.id)
      .where('message_id', '=', id)
      .executeTakeFirstOrThrow()
  ).state;

describe('a driven turn session', () => {
  test('nothing pending: no turn, and none left open', async () => {
    expect(await TurnSession.begin(h.ctx, bot, { sessionKey: 'test:1' })).toBeUndefined();
    expect(await openTurnOfAgent(h.ctx, bot)).toBeUndefined();
  });

  test('the first slice is covered and counted at begin; a successful settle handles exactly it', async () => {
    const [a, b, c] = [await send('a'), await send('b'), await send('c')];
    const session = await begin(2);
    expect(session.first.delivered.map((m) => m.id)).toEqual([a, b]);
    expect(session.phase).toBe('running');
    expect(await dispatchAttemptsOf(h.ctx, bot, [a, b, c])).toEqual([1, 1, 0]);
    const report = await session.settle({ ok: true });
    expect(report).toMatchObject({ turnId: session.id, outcome: 'ok', delivered: [a, b], handled: [a, b] });
    expect(session.phase).toBe('ended');
    expect(await pendingIds(h.ctx, bot.id)).toEqual([c]);
    // Settled: the client coped with them, so their attempts are forgotten.
    expect(await dispatchAttemptsOf(h.ctx, bot, [a, b])).toEqual([0, 0]);
  });

  test('a failed settle returns what the turn carried, with the kind', async () => {
    const a = await send('a');
    const report = await (await begin()).settle({ ok: false, kind: 'model_error', reason: 'boom' });
    expect(report).toMatchObject({
      outcome: 'failed',
      failureKind: 'model_error',
      returned: [a],
      handled: [],
    });
    expect(await stateOf(a)).toBe('returned');
  });

  test('a steer counts only once the client shows its model the exact text', async () => {
    const first = await send('first');
    const session = await begin();
    const [seen, unseen] = [await send('seen'), await send('unseen')];
    const steer = await session.nextSteer();
    expect(steer?.delivered.map((m) => m.id)).toEqual([seen, unseen]);
    if (!steer) return;
    // Nothing more behind it while the client answers: one steer at a time.
    await session.steerAnswered(steer, true);
    expect(session.delivered).toEqual([first, seen, unseen]);
    session.saw({ kind: 'user_message', text: `${steer.delivery.text} ` });
    session.saw({ kind: 'tool_result', text: steer.delivery.text.slice(1) });
    const report = await session.settle({ ok: true });
    // Taken but never shown whole: carried (and reported), consumed nothing.
    expect(report.handled).toEqual([first]);
    expect(await pendingIds(h.ctx, bot.id)).toEqual([seen, unseen]);
  });

  test('a steer seen exactly joins the turn and settles with it', async () => {
    const first = await send('first');
    const session = await begin();
    const later = await send('later');
    const steer = await session.nextSteer();
    if (!steer) throw new Error('expected a steer');
    await session.steerAnswered(steer, true);
    session.saw({ kind: 'user_message', text: steer.delivery.text });
    expect((await session.settle({ ok: true })).handled).toEqual([first, later]);
  });

  test('a refused steer is withdrawn: not carried, not counted, offered to the next turn', async () => {
    await send('first');
    const session = await begin();
    const later = await send('later');
    const steer = await session.nextSteer();
    if (!steer) throw new Error('expected a steer');
    await session.steerAnswered(steer, false);
    // Even a sighting of the refused text confirms nothing: its offer is gone.
    session.saw({ kind: 'user_message', text: steer.delivery.text });
    const report = await session.settle({ ok: true });
    expect(report.delivered).not.toContain(later);
    expect(await pendingIds(h.ctx, bot.id)).toEqual([later]);
    expect(await dispatchAttemptsOf(h.ctx, bot, [later])).toEqual([0]);
  });

  test('no steer within a spent budget, while paused, or after the end', async () => {
    await send('first');
    const session = await begin(1);
    await send('later');
    expect(await session.nextSteer()).toBeUndefined();
    await session.settle({ ok: true });
    expect(await session.nextSteer()).toBeUndefined();
    const next = await begin();
    await send('behind');
    await pauseQueue(h.ctx, h.owner, bot.name);
    expect(await next.nextSteer()).toBeUndefined();
  });

  test('abandoned: nothing consumed; a stop takes the attempts back, an unsettled end keeps them', async () => {
    const a = await send('a');
    const stopped = await begin();
    expect(await stopped.abandon('stopped', 'driver stopped')).toMatchObject({
      outcome: 'abandoned',
      reason: 'driver stopped',
      delivered: [a],
      handled: [],
    });
    expect(await dispatchAttemptsOf(h.ctx, bot, [a])).toEqual([0]);
    const refused = await begin();
    await refused.abandon('unsettled', 'the client refused the turn');
    expect(await dispatchAttemptsOf(h.ctx, bot, [a])).toEqual([1]);
    expect(await pendingIds(h.ctx, bot.id)).toEqual([a]);
  });

  test('waits on a person while asked, runs again once answered, and ends with no wait left', async () => {
    await send('a');
    const session = await begin();
    session.waitOnPerson('apr_1');
    session.waitOnPerson('apr_2');
    expect(session.phase).toBe('waiting');
    session.personAnswered('apr_1');
    expect(session.waitingOn).toEqual(['apr_2']);
    session.personAnswered('apr_2');
    expect(session.phase).toBe('running');
    session.waitOnPerson('apr_3');
    await session.abandon('stopped', 'driver stopped');
    expect(session.phase).toBe('ended');
    expect(session.waitingOn).toEqual([]);
    session.waitOnPerson('apr_4');
    expect(session.phase).toBe('ended');
  });
});

describe('carriedWhole', () => {
  test('does not cover a message edited after its slice was rendered: it stays pending', async () => {
    const kept = await send('kept');
    const edited = await send('before');
    await beginTurn(h.ctx, bot);
    const slice = await renderDispatch(h.ctx, bot, {});
    await editMessage(h.ctx, h.owner, edited, { body: 'after' });
    const { delivered, reads } = await carriedWhole(h.ctx, bot, slice);
    expect(delivered.map((m) => m.id)).toEqual([kept]);
    expect(reads).toHaveLength(1);
  });
});

describe('the turn dispatcher', () => {
  const open = async () =>
    TurnDispatcher.open(h.ctx, bot, { sessionKey: 'test:1', retryDelayMs: 100 }).then((o) => o.dispatcher);
  const abandoned: TurnReport = {
    turnId: 't',
    delivered: ['m'],
    outcome: 'abandoned',
    handled: [],
    returned: [],
    durationMs: 0,
  };

  test('refuses an explicit agent, and abandons a turn left open by a dead driver', async () => {
    const explicit = await h.agent('manual', 'explicit');
    await expect(TurnDispatcher.open(h.ctx, explicit, { sessionKey: 'x' })).rejects.toThrow(/settle/);
    const stale = await beginTurn(h.ctx, bot);
    expect((await TurnDispatcher.open(h.ctx, bot, { sessionKey: 'x' })).abandoned).toBe(stale.id);
    expect(await openTurnOfAgent(h.ctx, bot)).toBeUndefined();
  });

  test('ready only with something pending and deliverable', async () => {
    const dispatcher = await open();
    expect((await dispatcher.ready()).ready).toBe(false);
    await send('a');
    expect((await dispatcher.ready()).ready).toBe(true);
    await pauseQueue(h.ctx, h.owner, bot.name);
    expect((await dispatcher.ready()).ready).toBe(false);
  });

  test('after a turn without progress it waits for the queue to change', async () => {
    const dispatcher = await open();
    await send('a');
    await dispatcher.ended({ ...abandoned, delivered: [] });
    expect((await dispatcher.ready()).ready).toBe(false);
    await send('b');
    expect((await dispatcher.ready()).ready).toBe(true);
    await dispatcher.ended(abandoned);
    expect((await dispatcher.ready()).ready).toBe(true);
  });

  test('backs off after refused turns, doubling up to 30 s, and forgets once one settles', async () => {
    const dispatcher = await open();
    const delays = Array.from({ length: 12 }, () => dispatcher.retryDelayAfter(abandoned));
    expect(delays.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(Math.max(...delays)).toBe(30_000);
    expect(dispatcher.retryDelayAfter({ ...abandoned, outcome: 'ok' })).toBe(0);
    expect(dispatcher.retryDelayAfter(undefined)).toBe(0);
    expect(dispatcher.retryDelayAfter(abandoned)).toBe(100);
  });
});
