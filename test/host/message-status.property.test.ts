// The status never runs ahead of the consumption rule: after any mix of sends, reads whose result
// did or did not reach the client, fragments, edits and archives in a turn, exactly the messages
// the status calls `received` become `handled` when the turn succeeds, and every message it calls
// `stored` or `offered` stays pending.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { readMessageStatus } from '../../src/host/messages/message-status.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import { channelRead } from '../../src/host/reads/index.js';
import { beginTurn, confirmWritten, endTurn } from '../../src/host/turns/index.js';
import { findInboxEntry } from '../../src/store/ops/inbox.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { withBudget } from '../mcp/support.js';
import { openTestHost, type TestHost } from '../support/host.js';

let t: TestHost;
let alice: Principal;
let run = 0;

beforeAll(async () => {
  t = await openTestHost();
  alice = await t.person('alice');
});
afterAll(async () => t?.close());

type Op =
  | { kind: 'send'; size: number }
  | { kind: 'read'; pick: number; delivered: boolean }
  | { kind: 'fragment'; pick: number }
  | { kind: 'edit'; pick: number }
  | { kind: 'archive'; pick: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('send' as const), size: fc.integer({ min: 1, max: 3000 }) }),
  fc.record({ kind: fc.constant('read' as const), pick: fc.nat(), delivered: fc.boolean() }),
  fc.record({ kind: fc.constant('fragment' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('edit' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('archive' as const), pick: fc.nat() }),
);

it('received ⇔ consumed by the successful settle; stored and offered stay pending', async () => {
  // A small tool budget makes big messages come in fragments: a first fragment alone is `offered`.
  const small = await withBudget(t.ctx, 1_500);
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
      run += 1;
      const bot = await t.agent(`bot${run}`, 'turn');
      await t.manage(bot.name, 'alice'); // only its managers add an agent to a group
      const channel = await createChannel(t.ctx, alice, { name: `c${run}`, members: [bot.name] });
      const ids: string[] = [];
      const turn = await beginTurn(t.ctx, bot);
      for (const o of ops) {
        const id = ids.length > 0 && o.kind !== 'send' ? ids[o.pick % ids.length]! : undefined;
        if (o.kind === 'send' || id === undefined) {
          const size = o.kind === 'send' ? o.size : 10;
          ids.push((await sendMessage(t.ctx, alice, { to: channel.id, body: 'x'.repeat(size) })).message_id);
        } else if (o.kind === 'read') {
          const outcome = await channelRead(t.ctx, bot, { message_id: id });
          if (o.delivered && outcome.receipt) await confirmWritten(t.ctx, outcome.receipt);
        } else if (o.kind === 'fragment') {
          const outcome = await channelRead(small, bot, { message_id: id });
          if (outcome.receipt) await confirmWritten(small, outcome.receipt);
        } else if (o.kind === 'edit') {
          await editMessage(t.ctx, alice, id, { body: `edited ${run}` });
        } else {
          await archiveMessages(t.ctx, bot, [id]);
        }
      }
      const before = new Map<string, string>();
      for (const id of ids) {
        const status = await readMessageStatus(t.ctx, alice, id);
        expect(status.recipients.map((r) => r.agent)).toEqual([bot.name]);
        before.set(id, status.recipients[0]!.state);
      }
      const settled = await endTurn(t.ctx, bot, turn.id, { ok: true });
      const received = ids.filter((id) => before.get(id) === 'received');
      expect(new Set(settled.handled)).toEqual(new Set(received));
      for (const id of ids) {
        const state = before.get(id);
        const row = await findMessageById(t.ctx.store.db, id);
        const entry = await findInboxEntry(t.ctx.store.db, bot.id, Number(row!.seq));
        if (state === 'stored' || state === 'offered') expect(entry!.state).toBe('waiting');
        if (state === 'archived') expect(entry!.state).toBe('archived');
        expect((await readMessageStatus(t.ctx, alice, id)).recipients[0]!.state).toBe(
          state === 'received' ? 'handled' : state === 'offered' ? 'stored' : state,
        );
      }
    }),
    { numRuns: 40 },
  );
}, 120_000);
