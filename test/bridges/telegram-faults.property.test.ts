// Property: whatever mix of poison updates (refused replies, over-long names, missing files,
// strangers, groups) arrives between a paired person's messages, every update is confirmed and
// every paired message reaches the agent exactly once, in order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backendsUnderTest } from '../conformance/backend.js';
import { PHONE, STRANGER, useBridgeHarness } from './telegram-harness.js';

const BLOCKED = STRANGER + 1;
const GROUP = -1009876543210;

type Event =
  | { kind: 'paired' }
  | { kind: 'blocked stranger' }
  | { kind: 'stranger' }
  | { kind: 'group' }
  | { kind: 'long /to'; length: number }
  | { kind: 'missing file' };

const event: fc.Arbitrary<Event> = fc.oneof(
  fc.constant({ kind: 'paired' as const }),
  fc.constant({ kind: 'blocked stranger' as const }),
  fc.constant({ kind: 'stranger' as const }),
  fc.constant({ kind: 'group' as const }),
  fc.integer({ min: 60, max: 5000 }).map((length) => ({ kind: 'long /to' as const, length })),
  fc.constant({ kind: 'missing file' as const }),
);

describe.each(backendsUnderTest())('the Telegram bridge under mixed poison on %s', (backend) => {
  const h = useBridgeHarness(backend, 'tgprop');

  it('confirms every update and delivers every paired message once, in order', {
    timeout: 180_000,
  }, async () => {
    await h.start();
    await h.pairPhone();
    h.fake.refuse({ chatId: BLOCKED, code: 403, description: 'Forbidden: bot was blocked by the user' });
    h.fake.refuse({
      chatId: GROUP,
      code: 400,
      description: 'Bad Request: not enough rights to send text messages',
    });
    let sent = 0;
    const expected: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 8 }), async (events) => {
        let last = 0;
        for (const e of events) {
          if (e.kind === 'paired') {
            const body = `paired message ${sent++}`;
            expected.push(body);
            last = h.fake.pushMessage(PHONE, { text: body });
          } else if (e.kind === 'blocked stranger') last = h.fake.pushMessage(BLOCKED, { text: 'hi' });
          else if (e.kind === 'stranger') last = h.fake.pushMessage(STRANGER, { text: 'hi' });
          else if (e.kind === 'group') {
            last = h.fake.pushMessage(STRANGER, {
              text: 'hi',
              chat: { id: GROUP, type: 'group', title: 'g' },
            });
          } else if (e.kind === 'long /to')
            last = h.fake.pushMessage(PHONE, { text: `/to ${'x'.repeat(e.length)}` });
          else {
            last = h.fake.pushMessage(PHONE, {
              document: { file_id: `gone-${last}`, file_unique_id: `g${last}`, file_name: 'a.pdf' },
            });
          }
        }
        await h.fake.until(() => h.fake.confirmedOffset() > last, 30_000, `confirmation of ${last}`);
        const rows = await h.untilMessages(expected.length);
        expect(rows.map((r) => r.body)).toEqual(expected);
        for (const text of h.fake.sent.map((s) => s.text ?? ''))
          expect(text.length).toBeLessThanOrEqual(4096);
        expect(h.logs.filter((l) => /gave up|not handled yet/.test(l))).toEqual([]);
      }),
      { numRuns: 25 },
    );
  });
});
