// Nothing is consumed unless the client saw it whole (I3, I9), through the host's turn session
// alone: after any mix of sends, edits, steers the client takes or refuses, and sightings exact,
// altered or missing, a successful turn handles exactly the messages its first slice carried and
// the steers whose exact text the client showed its model — unedited since they were shown; a
// failed turn returns exactly those; an abandoned one consumes nothing; nothing is ever lost.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { TurnSession } from '../../src/host/turns/index.js';
import { openTestHost, type TestHost } from '../support/host.js';

let t: TestHost;
let run = 0;
beforeAll(async () => {
  t = await openTestHost();
});
afterAll(async () => t?.close());

type SteerAnswer = 'seen' | 'unseen' | 'altered' | 'refused';
type Op =
  | { kind: 'send' }
  | { kind: 'edit'; pick: number }
  | { kind: 'steer'; answer: SteerAnswer }
  | { kind: 'noise' };
type End = 'ok' | 'failed' | 'stopped' | 'unsettled';

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant<Op>({ kind: 'send' }), weight: 3 },
  { arbitrary: fc.nat().map<Op>((pick) => ({ kind: 'edit', pick })), weight: 1 },
  {
    arbitrary: fc
      .constantFrom<SteerAnswer>('seen', 'unseen', 'altered', 'refused')
      .map<Op>((answer) => ({ kind: 'steer', answer })),
    weight: 3,
  },
  { arbitrary: fc.constant<Op>({ kind: 'noise' }), weight: 1 },
);

/** A text the client might show that is not the steered one: cut, or one character changed. */
function altered(text: string, cut: boolean): string {
  return cut ? text.slice(0, -1) : `${text.slice(0, -1)}${text.endsWith('x') ? 'y' : 'x'}`;
}

async function statesOf(agent: Principal): Promise<Map<string, string>> {
  const rows = await t.ctx.store.db
    .selectFrom('inbox')
    .select(['message_id', 'state'])
    .where('agent_id', '=', agent.id)
    .execute();
  return new Map(rows.map((r) => [r.message_id, r.state]));
}

it('consumes exactly what the client saw whole and unchanged, by the turn outcome', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 3 }),
      fc.integer({ min: 2, max: 6 }),
      fc.array(op, { maxLength: 12 }),
      fc.constantFrom<End>('ok', 'failed', 'stopped', 'unsettled'),
      async (initial, maxMessages, ops, end) => {
        run += 1;
        const bot = await t.agent(`bot${run}`, 'turn');
        const ids: string[] = [];
        let edits = 0;
        /** Each message's current version (its edits so far). */
        const version = new Map<string, number>();
        const send = async () => {
          const id = (await sendMessage(t.ctx, t.owner, { to: bot.name, body: `m${ids.length}` })).message_id;
          ids.push(id);
          version.set(id, 0);
        };
        for (let i = 0; i < initial; i++) await send();
        const session = await TurnSession.begin(t.ctx, bot, { sessionKey: 'prop', limits: { maxMessages } });
        if (!session) throw new Error('messages are pending: a turn begins');
        /** The version of each message the model was shown whole (first slice, or a steer seen exactly). */
        const shown = new Map(session.first.delivered.map((m) => [m.id, 0]));
        const carried = [...session.first.delivered.map((m) => m.id)];
        for (const o of ops) {
          if (o.kind === 'send') await send();
          else if (o.kind === 'edit') {
            const id = ids[o.pick % ids.length] as string;
            await editMessage(t.ctx, t.owner, id, { body: `edited ${++edits}` });
            version.set(id, (version.get(id) ?? 0) + 1);
          } else if (o.kind === 'noise') {
            session.saw({ kind: 'tool_result', text: 'unrelated output' });
          } else {
            const steer = await session.nextSteer();
            if (!steer) continue;
            const steered = steer.delivered.map((m) => m.id);
            await session.steerAnswered(steer, o.answer !== 'refused');
            if (o.answer === 'refused') continue;
            carried.push(...steered);
            const text = steer.delivery.text;
            if (o.answer === 'seen') {
              session.saw({ kind: 'user_message', text });
              for (const id of steered) shown.set(id, version.get(id) ?? 0);
            } else if (o.answer === 'altered') {
              session.saw({ kind: 'user_message', text: altered(text, edits % 2 === 0) });
            }
          }
        }
        const report =
          end === 'ok'
            ? await session.settle({ ok: true })
            : end === 'failed'
              ? await session.settle({ ok: false, kind: 'model_error' })
              : await session.abandon(end, 'ended');
        // An edit after a message was shown means the model never saw this version.
        const consumable = [...shown]
          .filter(([id, v]) => version.get(id) === v)
          .map(([id]) => id)
          .sort();
        const states = await statesOf(bot);
        const inState = (state: string) => ids.filter((id) => states.get(id) === state).sort();
        // Nothing lost: every message is still there, pending or consumed by this turn alone.
        expect([...states.keys()].sort()).toEqual([...ids].sort());
        expect(report.delivered).toEqual(carried);
        expect(inState('handled')).toEqual(end === 'ok' ? consumable : []);
        expect(inState('returned')).toEqual(end === 'failed' ? consumable : []);
        expect([...report.handled].sort()).toEqual(inState('handled'));
        expect([...report.returned].sort()).toEqual(inState('returned'));
        expect(session.phase).toBe('ended');
      },
    ),
    { numRuns: 80 },
  );
});
