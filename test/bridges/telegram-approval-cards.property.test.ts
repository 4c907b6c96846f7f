// Properties of an approval card: whatever the request holds, the card and its edited form fit
// Telegram's 4,096 characters, a cut card says so, and a button's data fits 64 bytes and reads back.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatPrefixedId } from '../../src/core/ids.js';
import { revealInvisible } from '../../src/core/text.js';
import type { ApprovalView } from '../../src/host/approvals/views.js';
import {
  approvalCardShowsAll,
  approvalCardText,
  callbackData,
  keyboard,
  outcomeLine,
  parseCallbackData,
  TRUNCATED_MARKER,
} from '../../src/surfaces/bridges/telegram/approval-cards.js';

const subject = fc.record(
  {
    tool: fc.string(),
    input: fc.jsonValue(),
    command: fc.string({ unit: 'grapheme', maxLength: 6000 }),
    cwd: fc.string(),
    diff: fc.string({ unit: 'binary', maxLength: 9000 }),
    reason: fc.string(),
  },
  { requiredKeys: [] },
);

const view = fc.record({
  subject,
  status: fc.constantFrom('pending', 'allowed', 'denied', 'expired') as fc.Arbitrary<ApprovalView['status']>,
  decidedBy: fc.option(fc.string({ minLength: 1, maxLength: 64 }), { nil: null }),
});

describe('Telegram approval cards', () => {
  it('a card and its edited form fit Telegram, and a cut card ends with the marker', () => {
    fc.assert(
      fc.property(view, ({ subject: s, status, decidedBy }) => {
        const approval: ApprovalView = {
          id: 'apr_0123456789abcdef',
          agent: 'helper',
          client: 'claude',
          kind: 'tool',
          subject: s,
          turnId: null,
          status,
          note: null,
          createdAt: 0,
          expiresAt: 0,
          decidedBy,
          decidedAt: null,
        };
        const card = approvalCardText(approval);
        expect(`${card}\n\n${outcomeLine(approval)}`.length).toBeLessThanOrEqual(4096);
        // Nothing that acts instead of showing (controls, bidi overrides) reaches the phone.
        expect(card).not.toMatch(/(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
        // Not cut: every field is shown whole (its invisible characters as escapes), and Allow is
        // offered. Cut: the card says so at its end, and offers Deny only.
        const whole = !card.endsWith(TRUNCATED_MARKER);
        expect(approvalCardShowsAll(approval)).toBe(whole);
        expect(keyboard(approval).inline_keyboard[0]?.length).toBe(whole ? 2 : 1);
        if (whole)
          for (const text of [s.tool, s.command, s.cwd, s.diff, s.reason])
            if (text !== undefined) expect(card).toContain(revealInvisible(text, { keepNewlines: true }));
      }),
      { numRuns: 200 },
    );
  });

  it('button data of any approval id fits 64 bytes and reads back as the same decision', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.constantFrom('allow', 'deny'),
        (bytes, d) => {
          const id = formatPrefixedId('apr', bytes);
          const data = callbackData(id, d as 'allow' | 'deny');
          expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
          expect(parseCallbackData(data)).toEqual({ approvalId: id, decision: d });
        },
      ),
    );
  });
});
