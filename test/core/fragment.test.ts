import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { type FragmentResult, fragmentAt, sha256Hex, sliceUtf16Safe } from '../../src/core/fragment.js';
import { hostileString, splitsSurrogatePair } from './arbitraries.js';

const cursorFor = (end: number) => `content:${end}`;

/** Walks a whole text through fragmentAt, checking every invariant of each step on the way. */
function walk(messageId: string, text: string, budget: number): FragmentResult[] {
  const results: FragmentResult[] = [];
  let offset = 0;
  for (;;) {
    const result = fragmentAt({ messageId, text, offset, budget, makeCursor: cursorFor });
    const end = offset + result.fragment.length;
    expect(JSON.stringify(result).length).toBeLessThanOrEqual(budget);
    expect(result.offset).toBe(offset);
    expect(result.total).toBe(text.length);
    expect(result.outputLimit).toBe(budget);
    expect(result.sha256).toBe(sha256Hex(text));
    expect(splitsSurrogatePair(text, offset)).toBe(false);
    expect(splitsSurrogatePair(text, end)).toBe(false);
    results.push(result);
    if (result.complete) {
      expect(end).toBe(text.length);
      expect(result.contentCursor).toBeNull();
      return results;
    }
    expect(end).toBeGreaterThan(offset);
    expect(result.contentCursor).toBe(cursorFor(end));
    expectLargest(messageId, text, budget, result);
    offset = end;
  }
}

/** One more code point would not fit (as a longer fragment, or as the complete rest). */
function expectLargest(messageId: string, text: string, budget: number, result: FragmentResult): void {
  const end = result.offset + result.fragment.length;
  const next = end + String.fromCodePoint(text.codePointAt(end)!).length;
  const grown = { ...result, fragment: text.slice(result.offset, next) };
  const serialized =
    next === text.length
      ? JSON.stringify({ ...grown, contentCursor: null, complete: true })
      : JSON.stringify({ ...grown, contentCursor: cursorFor(next) });
  expect(serialized.length, `${messageId} could hold one more code point`).toBeGreaterThan(budget);
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof SluiceError ? err.code : 'not a SluiceError';
  }
  return undefined;
}

const projectionArb = fc.record({
  channel_id: hostileString(12),
  message_id: hostileString(12),
  author: fc.record({
    id: hostileString(8),
    name: hostileString(8),
    kind: fc.constantFrom('person', 'agent'),
  }),
  created_at: fc.constant('2025-01-02T03:04:05.000Z'),
  body: hostileString(400),
  attachments: fc.array(fc.record({ attachment_id: hostileString(8), name: hostileString(8) }), {
    maxLength: 2,
  }),
  actions: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 2 }),
});

describe('fragmentAt', () => {
  it('returns a text that fits whole as one complete fragment', () => {
    const text = JSON.stringify({ body: 'hello' });
    const result = fragmentAt({ messageId: 'm1', text, offset: 0, budget: 12_000, makeCursor: cursorFor });
    expect(result).toMatchObject({ fragment: text, complete: true, contentCursor: null, offset: 0 });
    expect(result.total).toBe(text.length);
  });

  it('walks a projection in fragments that rejoin byte for byte and parse back to it', () => {
    fc.assert(
      fc.property(projectionArb, fc.integer({ min: 360, max: 900 }), (projection, budget) => {
        const text = JSON.stringify(projection);
        const joined = walk('msg-1', text, budget)
          .map((r) => r.fragment)
          .join('');
        expect(joined).toBe(text);
        expect(JSON.parse(joined)).toEqual(JSON.parse(text));
      }),
      { numRuns: 150 },
    );
  });

  it('walks raw hostile text (lone surrogates, controls, quotes) without losing or splitting anything', () => {
    fc.assert(
      fc.property(
        hostileString(600),
        hostileString(10),
        fc.integer({ min: 340, max: 700 }),
        (text, id, room) => {
          // Hostile ids can be long once escaped; the budget grows with them so one code point fits.
          const budget = room + JSON.stringify(id).length;
          const joined = walk(id, text, budget)
            .map((r) => r.fragment)
            .join('');
          expect(joined).toBe(text);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('keeps each surrogate pair whole even when the budget leaves room for exactly one unit more', () => {
    const text = '😀'.repeat(300);
    for (let budget = 330; budget < 360; budget++) {
      const joined = walk('m', text, budget)
        .map((r) => r.fragment)
        .join('');
      expect(joined).toBe(text);
    }
  });

  it('refuses offsets outside the text, inside a pair or not integers', () => {
    const text = 'a😀b';
    const at = (offset: number) => () =>
      fragmentAt({ messageId: 'm', text, offset, budget: 1000, makeCursor: cursorFor });
    expect(codeOf(at(-1))).toBe('invalid_cursor');
    expect(codeOf(at(5))).toBe('invalid_cursor');
    expect(codeOf(at(2))).toBe('invalid_cursor');
    expect(codeOf(at(1.5))).toBe('invalid_cursor');
    expect(codeOf(at(Number.NaN))).toBe('invalid_cursor');
    expect(codeOf(at(3))).toBeUndefined();
    expect(at(4)()).toMatchObject({ fragment: '', complete: true, offset: 4, total: 4 });
  });

  it('throws too_large when not even one code point fits', () => {
    const text = 'x'.repeat(1000);
    const call = (budget: number) => () =>
      fragmentAt({ messageId: 'm', text, offset: 0, budget, makeCursor: cursorFor });
    expect(codeOf(call(100))).toBe('too_large');
    // Find the smallest budget that works: it holds exactly one character.
    let budget = 100;
    while (codeOf(call(budget)) === 'too_large') budget += 1;
    expect(call(budget)().fragment).toBe('x');
  });

  it('calls makeCursor only for continuations', () => {
    const ends: number[] = [];
    fragmentAt({
      messageId: 'm',
      text: 'short',
      offset: 0,
      budget: 1000,
      makeCursor: (end) => {
        ends.push(end);
        return String(end);
      },
    });
    expect(ends).toEqual([]);
  });
});

describe('sliceUtf16Safe', () => {
  it('moves an end that would split a pair back by one and clamps to the text', () => {
    expect(sliceUtf16Safe('a😀b', 0, 2)).toBe(1);
    expect(sliceUtf16Safe('a😀b', 0, 3)).toBe(3);
    expect(sliceUtf16Safe('a😀b', 0, 99)).toBe(4);
    expect(sliceUtf16Safe('a😀b', 2, 1)).toBe(2);
    expect(sliceUtf16Safe('\ud800\ud800', 0, 1)).toBe(1);
  });

  it('never returns an end inside a pair', () => {
    fc.assert(
      fc.property(hostileString(50), fc.nat(60), fc.nat(60), (text, a, b) => {
        const start = Math.min(a, text.length);
        const end = sliceUtf16Safe(text, start, b);
        expect(end).toBeGreaterThanOrEqual(start);
        expect(end).toBeLessThanOrEqual(text.length);
        if (end > start) expect(splitsSurrogatePair(text, end)).toBe(false);
      }),
    );
  });
});

describe('sha256Hex', () => {
  it('hashes the UTF-8 text', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});

describe('fragmentAt with a byte budget too', () => {
  it('keeps every fragment within both budgets and the chain lossless', () => {
    fc.assert(
      fc.property(
        hostileString(20).map((s) => s.repeat(40)),
        fc.integer({ min: 400, max: 900 }),
        (text, bytes) => {
          const budget = 1_000;
          let offset = 0;
          let joined = '';
          for (;;) {
            const r = fragmentAt({
              messageId: 'm',
              text,
              offset,
              budget,
              byteBudget: bytes,
              makeCursor: cursorFor,
            });
            const serialized = JSON.stringify(r);
            expect(serialized.length).toBeLessThanOrEqual(budget);
            expect(Buffer.byteLength(serialized, 'utf8')).toBeLessThanOrEqual(bytes);
            joined += r.fragment;
            if (r.complete) break;
            expect(r.fragment.length).toBeGreaterThan(0);
            offset += r.fragment.length;
          }
          expect(joined).toBe(text);
        },
      ),
    );
  });
});

describe('fragmentAt with the hash its caller already has', () => {
  it('puts that hash in the result instead of hashing the text again, and cuts the same fragment', () => {
    const text = JSON.stringify({ body: 'é🙂x'.repeat(2_000) });
    const budget = 1_000;
    const computed = fragmentAt({ messageId: 'm', text, offset: 0, budget, makeCursor: cursorFor });
    const given = fragmentAt({
      messageId: 'm',
      text,
      sha256: computed.sha256,
      offset: 0,
      budget,
      makeCursor: cursorFor,
    });
    expect(given).toEqual(computed);
    const marked = fragmentAt({
      messageId: 'm',
      text,
      sha256: 'f'.repeat(64),
      offset: 0,
      budget,
      makeCursor: cursorFor,
    });
    expect(marked.sha256).toBe('f'.repeat(64));
  });
});
