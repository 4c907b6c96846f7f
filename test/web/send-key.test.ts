// A draft's idempotency key (web/src/channels/send-key.ts): the same request keeps its key until it
// is confirmed; another request, or the next draft, gets a new one.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DraftKeys, newSendKey } from '../../web/src/channels/send-key.js';

const request = fc.record({
  to: fc.string(),
  body: fc.string(),
  attachments: fc.option(fc.array(fc.string(), { maxLength: 3 }), { nil: undefined }),
  reply_to: fc.option(fc.string(), { nil: undefined }),
});

describe('a draft’s idempotency key', () => {
  it('is one the host accepts: 1-200 printable characters', () => {
    expect(newSendKey()).toMatch(/^web-[0-9a-f]{32}$/);
    expect(newSendKey()).not.toBe(newSendKey());
  });

  it('is reused for the same request until confirmed, and new for any other', () => {
    fc.assert(
      fc.property(request, request, (a, b) => {
        let n = 0;
        const keys = new DraftKeys(() => `k${n++}`);
        const first = keys.keyFor(a);
        expect(keys.keyFor({ ...a })).toBe(first);
        const same =
          JSON.stringify([a.to, a.body, a.attachments ?? [], a.reply_to ?? null]) ===
          JSON.stringify([b.to, b.body, b.attachments ?? [], b.reply_to ?? null]);
        expect(keys.keyFor(b) === first).toBe(same);
        keys.sent();
        expect(keys.keyFor(b)).not.toBe(first);
      }),
    );
  });
});
