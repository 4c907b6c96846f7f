// Issue 22 item 4: no single update, message or reply blocks the Telegram bridge. Each test sends
// one "poison" update (a refused reply, a refused getFile, an over-long reply, a failure that never
// heals) and then checks that the update was confirmed to Telegram and that a paired person's next
// message still reaches the agent.
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { isWellFormed } from '../../src/core/text.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { backendsUnderTest } from '../conformance/backend.js';
import { PHONE, STRANGER, useBridgeHarness } from './telegram-harness.js';

const GROUP = -1001234567890;
const FAST_RETRY = { updateAttempts: 3, firstDelayMs: 5 };

describe.each(backendsUnderTest())('the Telegram bridge under faults on %s', (backend) => {
  const h = useBridgeHarness(backend, 'tgfaults');

  /** Sends a text from the paired phone after the poison and waits until the agent has it. */
  async function pairedMessageGetsThrough(body: string): Promise<void> {
    const before = (await h.messageRows()).length;
    h.fake.pushMessage(PHONE, { text: body });
    const rows = await h.untilMessages(before + 1);
    expect(rows.map((r) => r.body)).toContain(body);
  }

  /** Waits until Telegram was told every update up to and including `updateId` was handled. */
  function untilConfirmed(updateId: number): Promise<void> {
    return h.fake.until(() => h.fake.confirmedOffset() > updateId, 20_000, `confirmation of ${updateId}`);
  }

  const refusedLines = () => h.logs.filter((l) => /refused by Telegram/.test(l));

  describe('a refused reply is permanent for that reply', () => {
    it('a stranger who blocked the bot (403): one logged line, the update confirmed, paired people still get through', async () => {
      await h.start();
      await h.pairPhone();
      h.fake.refuse({ chatId: STRANGER, code: 403, description: 'Forbidden: bot was blocked by the user' });
      const poison = h.fake.pushMessage(STRANGER, { text: 'hello?' });
      await pairedMessageGetsThrough('after the blocked stranger');
      await untilConfirmed(poison);
      expect(h.fake.refused.filter((r) => r.chatId === String(STRANGER))).toHaveLength(1);
      expect(refusedLines()).toHaveLength(1);
      expect(refusedLines()[0]).toMatch(/403.*blocked by the user.*1 refused/);
    });

    it('a group where the bot cannot write (400 and 403): no retry, paired people still get through', async () => {
      await h.start();
      await h.pairPhone();
      const other = GROUP - 1;
      h.fake.refuse({
        chatId: GROUP,
        code: 400,
        description: 'Bad Request: not enough rights to send text messages to the chat',
      });
      h.fake.refuse({
        chatId: other,
        code: 403,
        description: 'Forbidden: bot is not a member of the supergroup chat',
      });
      const first = h.fake.pushMessage(STRANGER, {
        text: 'bot, do this',
        chat: { id: GROUP, type: 'supergroup', title: 'g' },
      });
      const second = h.fake.pushMessage(STRANGER, {
        text: 'and this',
        chat: { id: other, type: 'group', title: 'h' },
      });
      await pairedMessageGetsThrough('after the groups');
      await untilConfirmed(second);
      expect(first).toBeLessThan(second);
      expect(h.fake.refused.map((r) => r.code).sort()).toEqual([400, 403]);
      expect(refusedLines()).toHaveLength(2);
    });

    it('a `/to` with a 4,090-character name gets a reply within 4,096 characters, whole code points', async () => {
      await h.start();
      await h.pairPhone();
      h.fake.pushMessage(PHONE, { text: `/to ${'n'.repeat(4090)}` });
      const emoji = h.fake.pushMessage(PHONE, { text: `/to ${'😀'.repeat(2045)}` });
      await untilConfirmed(emoji);
      await pairedMessageGetsThrough('after the long names');
      const answers = h.textsTo(PHONE).filter((x) => x.startsWith('There is no agent named'));
      expect(answers).toHaveLength(2);
      for (const answer of answers) {
        expect(answer.length).toBeLessThanOrEqual(4096);
        expect(isWellFormed(answer)).toBe(true);
        expect(answer).toMatch(/…; \/agents lists them\.$/);
      }
      expect(h.fake.refused).toEqual([]);
    });

    it('an over-long reply Telegram refuses anyway (400 message is too long) is dropped, not retried', async () => {
      await h.start();
      await h.pairPhone();
      h.fake.refuse({
        method: 'sendMessage',
        chatId: PHONE,
        code: 400,
        description: 'Bad Request: message is too long',
      });
      const poison = h.fake.pushMessage(PHONE, { text: '/agents' });
      await untilConfirmed(poison);
      await pairedMessageGetsThrough('after the refused reply');
      expect(h.fake.refused).toHaveLength(1);
      expect(refusedLines()).toHaveLength(1);
    });
  });

  it('a refused getFile (400): the sender gets one line, nothing is stored, the next message gets through', async () => {
    await h.start();
    await h.pairPhone();
    const poison = h.fake.pushMessage(PHONE, {
      document: { file_id: 'no-such-file', file_unique_id: 'gone', file_name: 'plan.pdf' },
      caption: 'the plan',
    });
    await untilConfirmed(poison);
    expect(h.textsTo(PHONE).some((x) => /could not be fetched/.test(x))).toBe(true);
    expect(await h.messageRows()).toHaveLength(0);
    expect(await h.t.ctx.store.db.selectFrom('media').selectAll().execute()).toHaveLength(0);
    await pairedMessageGetsThrough('after the missing file');
    expect(h.fake.refused.filter((r) => r.method === 'getFile')).toHaveLength(1);
  });

  it('a file the media store refuses (over its size limit): one line, no retries, the next message gets through', async () => {
    const small: HostContext = { ...h.t.ctx, limits: { ...h.t.ctx.limits, maxUploadBytes: 4 } };
    await h.start(small);
    await h.pairPhone();
    const file = h.fake.addFile(Buffer.from('more than four bytes'));
    const poison = h.fake.pushMessage(PHONE, { document: { ...file, file_name: 'a.txt' } });
    await untilConfirmed(poison);
    expect(h.textsTo(PHONE).some((x) => /^Not sent: .*limit is 4/.test(x))).toBe(true);
    expect(h.logs.filter((l) => /not handled yet|gave up/.test(l))).toEqual([]);
    await pairedMessageGetsThrough('after the refused upload');
  });

  it('after a poison update, paired messages get through, and again after a restart', async () => {
    await h.start();
    await h.pairPhone();
    h.fake.refuse({ chatId: STRANGER, code: 403, description: 'Forbidden: bot was blocked by the user' });
    const poison = h.fake.pushMessage(STRANGER, { text: 'poison' });
    await pairedMessageGetsThrough('before the restart');
    await untilConfirmed(poison);
    await h.stop();
    await h.start();
    await pairedMessageGetsThrough('after the restart');
    // The restarted bridge was not handed the poison again: it was confirmed.
    expect(h.fake.refused).toHaveLength(1);
  });

  it('an update that keeps failing for another reason is tried a bounded number of times, then confirmed', async () => {
    await h.start(undefined, { retry: FAST_RETRY });
    await h.pairPhone();
    // Every reply to the stranger loses its connection: not a refusal, and it never heals.
    h.fake.refuse({ chatId: STRANGER, code: 0, description: '', hangUp: true });
    const poison = h.fake.pushMessage(STRANGER, { text: 'hello?' });
    await untilConfirmed(poison);
    await pairedMessageGetsThrough('after the bounded retries');
    expect(h.fake.refused).toHaveLength(FAST_RETRY.updateAttempts);
    expect(h.logs.filter((l) => /gave up/.test(l))).toHaveLength(1);
  });

  it('an agent message Telegram keeps failing on (5xx) is skipped after the bound; the next one arrives', async () => {
    await h.start(undefined, { retry: FAST_RETRY });
    await h.pairPhone();
    const helper = await resolvePrincipal(h.t.ctx, 'helper');
    h.fake.refuse({ chatId: PHONE, text: 'stuck', code: 500, description: 'Internal Server Error' });
    await sendMessage(h.t.ctx, helper, { to: 'owner', body: 'stuck' });
    await sendMessage(h.t.ctx, helper, { to: 'owner', body: 'next' });
    await h.fake.until(() => h.textsTo(PHONE).includes('next'), 20_000, 'the next message');
    expect(h.fake.refused.filter((r) => r.text === 'stuck')).toHaveLength(FAST_RETRY.updateAttempts);
    expect(h.logs.filter((l) => /part 1 to chat \d+ gave up after 3 tries/.test(l))).toHaveLength(1);
  });

  it('an agent message is held, not skipped, while Telegram is out of reach, and arrives after', async () => {
    await h.start(undefined, { retry: FAST_RETRY });
    await h.pairPhone();
    const helper = await resolvePrincipal(h.t.ctx, 'helper');
    const lift = h.fake.refuse({ chatId: PHONE, text: 'held', code: 0, description: '', hangUp: true });
    await sendMessage(h.t.ctx, helper, { to: 'owner', body: 'held' });
    const tries = () => h.fake.refused.filter((r) => r.text === 'held').length;
    await h.fake.until(() => tries() > FAST_RETRY.updateAttempts + 1, 20_000, 'tries beyond the bound');
    lift();
    await h.fake.until(() => h.textsTo(PHONE).includes('held'), 20_000, 'the held message');
    expect(h.logs.filter((l) => /gave up/.test(l))).toEqual([]);
  });

  it('a store that is unavailable is waited for beyond the bound, and the message is stored once', async () => {
    await h.start();
    await h.pairPhone();
    await h.stop();
    // The store refuses writes until the bridge has waited on it more often than the update bound.
    const waits = () => h.logs.filter((l) => /waiting for the store/.test(l)).length;
    const down = () => waits() < FAST_RETRY.updateAttempts + 2;
    const store = h.t.ctx.store;
    const flaky = new Proxy(store, {
      get(target, key) {
        if (key === 'transaction') {
          return (...args: Parameters<typeof store.transaction>) =>
            down()
              ? Promise.reject(new SluiceError('unavailable', 'the database is unreachable (test)'))
              : target.transaction(...args);
        }
        const value = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const ctx: HostContext = { ...h.t.ctx, store: flaky };
    await h.start(ctx, { retry: FAST_RETRY });
    const id = h.fake.pushMessage(PHONE, { text: 'stored once the store is back' });
    await untilConfirmed(id);
    const rows = await h.messageRows();
    expect(rows.map((r) => r.body)).toEqual(['stored once the store is back']);
    expect(waits()).toBeGreaterThan(FAST_RETRY.updateAttempts);
    expect(h.logs.filter((l) => /gave up/.test(l))).toEqual([]);
  });

  describe('an update whose fields are not what Telegram documents', () => {
    // A Bot API proxy or a changed API may hand out a text that is not a string. Before, the
    // bridge threw a TypeError, tried the update five times and sent the person the raw error.
    const malformed: [string, Record<string, unknown>][] = [
      ['a number as text', { text: 42 }],
      ['an object as text', { text: { toString: 'x' } }],
      ['a number as caption', { caption: 7, photo: 'not a list' }],
    ];
    it.each(malformed)(
      '%s: one plain line to the sender, no retries, the next message gets through',
      async (_, fields) => {
        await h.start(undefined, { retry: FAST_RETRY });
        await h.pairPhone();
        const poison = h.fake.pushMessage(PHONE, fields);
        await untilConfirmed(poison);
        await pairedMessageGetsThrough('after the malformed update');
        const replies = h.textsTo(PHONE).filter((t) => !t.startsWith('Paired'));
        expect(replies).toEqual(['That message could not be read, so it did not reach your agent.']);
        expect(h.logs.filter((l) => /not handled yet|gave up/.test(l))).toEqual([]);
        expect(h.logs.filter((l) => /malformed/.test(l))).toHaveLength(1);
        expect((await h.messageRows()).map((r) => r.body)).toEqual(['after the malformed update']);
      },
    );
  });

  describe('strangers and groups get at most one reply', () => {
    it('a stranger writing three times gets one line; every update is confirmed', async () => {
      await h.start();
      const ids = ['one', 'two', 'three'].map((text) => h.fake.pushMessage(STRANGER, { text }));
      await untilConfirmed(ids[2] as number);
      expect(h.textsTo(STRANGER)).toHaveLength(1);
      expect(h.textsTo(STRANGER)[0]).toMatch(/pairing code/);
      expect(await h.messageRows()).toHaveLength(0);
    });

    it('a group gets one line however often it is written in', async () => {
      await h.start();
      const chat = { id: GROUP, type: 'group', title: 'g' };
      const ids = [1, 2, 3].map((n) => h.fake.pushMessage(STRANGER + n, { text: `hi ${n}`, chat }));
      await untilConfirmed(ids[2] as number);
      expect(h.textsTo(GROUP)).toEqual(['This bot only works in a private chat.']);
    });

    it('many strangers at once get at most the global allowance of lines per minute', async () => {
      await h.start();
      const ids = Array.from({ length: 30 }, (_, i) =>
        h.fake.pushMessage(STRANGER + 100 + i, { text: 'hi' }),
      );
      await untilConfirmed(ids[ids.length - 1] as number);
      const lines = h.fake.sent.filter((s) => s.method === 'sendMessage').length;
      expect(lines).toBe(20);
      expect(h.logs.filter((l) => /not answered/.test(l))).toHaveLength(1);
    });
  });
});
