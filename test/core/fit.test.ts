import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type FitFrame, fitJsonPage, fitLargestPrefix } from '../../src/core/fit.js';
import { measure, type Unit } from '../../src/core/measure.js';
import { hostileString } from './arbitraries.js';

type Budgets = { utf16?: number; utf8?: number };

function withinBudgets(text: string, budgets: Budgets): boolean {
  return (['utf16', 'utf8'] as Unit[]).every((unit) => {
    const limit = budgets[unit];
    return limit === undefined || measure(text, unit) <= limit;
  });
}

/** The answer by brute force: build every candidate text and keep the largest that fits. */
function bruteForceCount(total: number, textFor: (count: number) => string, budgets: Budgets): number {
  let best = 0;
  for (let count = 1; count <= total; count++) if (withinBudgets(textFor(count), budgets)) best = count;
  return best;
}

const budgetsArb: fc.Arbitrary<Budgets> = fc
  .record(
    { utf16: fc.integer({ min: 0, max: 1500 }), utf8: fc.integer({ min: 0, max: 2500 }) },
    { requiredKeys: [] },
  )
  .filter((b) => b.utf16 !== undefined || b.utf8 !== undefined);

/** A page as hosts build it: a cursor while more remain (its digits grow with count), an omitted count. */
function pageRest(total: number, cursorPad: string) {
  return (count: number) => ({
    nextCursor: count < total ? `${cursorPad}${count}` : null,
    omitted: total - count,
  });
}

const itemArb = fc.oneof(
  fc.record({ id: hostileString(12), body: hostileString(80), n: fc.integer() }),
  fc.jsonValue({ maxDepth: 2 }),
  hostileString(30),
);

describe('fitLargestPrefix', () => {
  it('returns every item when all fit and the bare frame when none do', () => {
    const frame = () => ({ before: '[', after: ']' });
    expect(fitLargestPrefix({ items: ['1', '2'], budgets: { utf16: 5 }, frame })).toEqual({
      count: 2,
      text: '[1,2]',
    });
    expect(fitLargestPrefix({ items: ['1', '2'], budgets: { utf16: 4 }, frame })).toEqual({
      count: 1,
      text: '[1]',
    });
    expect(fitLargestPrefix({ items: ['123'], budgets: { utf8: 2 }, frame })).toEqual({
      count: 0,
      text: '[]',
    });
    expect(fitLargestPrefix({ items: [], budgets: { utf8: 0 }, frame })).toEqual({ count: 0, text: '[]' });
  });

  it('measures UTF-8 and UTF-16 budgets separately and honours both', () => {
    const frame = () => ({ before: '', after: '' });
    const items = ['😀', '😀', '😀'];
    expect(fitLargestPrefix({ items, separator: '', budgets: { utf16: 6, utf8: 8 }, frame }).count).toBe(2);
    expect(fitLargestPrefix({ items, separator: '', budgets: { utf16: 4 }, frame }).count).toBe(2);
    expect(fitLargestPrefix({ items, separator: '', budgets: { utf8: 12 }, frame }).count).toBe(3);
  });

  it('calls the frame only a few times, however many items there are', () => {
    const items = Array.from({ length: 10_000 }, (_, i) => `"item ${i}"`);
    let calls = 0;
    const frame = (count: number): FitFrame => {
      calls += 1;
      return {
        before: '{"items":[',
        after: `],"nextCursor":"cursor-${count}","omitted":${items.length - count}}`,
      };
    };
    const result = fitLargestPrefix({ items, budgets: { utf16: 50_000 }, frame });
    expect(result.text.length).toBeLessThanOrEqual(50_000);
    expect(calls).toBeLessThanOrEqual(6);
  });

  it('never exceeds a budget and returns the largest prefix, for any items, separator and frame', () => {
    fc.assert(
      fc.property(
        fc.array(hostileString(60), { maxLength: 25 }),
        fc.constantFrom(',', '', '\n', '😀,'),
        hostileString(10),
        hostileString(10),
        budgetsArb,
        (items, separator, head, tail, budgets) => {
          // The frame varies with count the way real ones do: a count in the header, a cursor
          // that disappears once everything is included.
          const frame = (count: number): FitFrame => ({
            before: `${head}${count} of ${items.length}[`,
            after: count < items.length ? `]${tail}cursor:${count}` : `]${tail}`,
          });
          const textFor = (count: number) => {
            const f = frame(count);
            return f.before + items.slice(0, count).join(separator) + f.after;
          };
          const result = fitLargestPrefix({ items, separator, budgets, frame });
          expect(result.text).toBe(textFor(result.count));
          if (result.count > 0) expect(withinBudgets(result.text, budgets)).toBe(true);
          expect(result.count).toBe(bruteForceCount(items.length, textFor, budgets));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('fitJsonPage', () => {
  it('puts the array first and the rest after it, exactly as JSON.stringify would', () => {
    const result = fitJsonPage({
      arrayKey: 'messages',
      items: [{ a: 1 }, undefined, 'x'],
      budgets: { utf16: 1000 },
      rest: () => ({ nextCursor: null, skipped: undefined, omitted: 0 }),
    });
    expect(result.text).toBe('{"messages":[{"a":1},null,"x"],"nextCursor":null,"omitted":0}');
    expect(result.serialized).toEqual(['{"a":1}', 'null', '"x"']);
    const empty = fitJsonPage({ arrayKey: 'rows', items: [], budgets: { utf8: 0 }, rest: () => ({}) });
    expect(empty).toEqual({ count: 0, text: '{"rows":[]}', serialized: [] });
  });

  it('refuses page shapes whose key order JSON.stringify would not keep', () => {
    const items = [1];
    const budgets = { utf16: 100 };
    expect(() => fitJsonPage({ arrayKey: '0', items, budgets, rest: () => ({}) })).toThrow(/integer-like/);
    expect(() => fitJsonPage({ arrayKey: 'm', items, budgets, rest: () => ({ m: 1 }) })).toThrow(
      /cannot follow/,
    );
    expect(() => fitJsonPage({ arrayKey: 'm', items, budgets, rest: () => ({ 7: 1 }) })).toThrow(
      /cannot follow/,
    );
  });

  it('serializes each item once', () => {
    let calls = 0;
    const items = Array.from({ length: 50 }, (_, i) => ({
      toJSON: () => {
        calls += 1;
        return { i };
      },
    }));
    fitJsonPage({ arrayKey: 'messages', items, budgets: { utf16: 200 }, rest: () => ({ nextCursor: null }) });
    expect(calls).toBe(50);
  });

  it('never exceeds a budget, returns the largest prefix, and its text is JSON.stringify of the page', () => {
    fc.assert(
      fc.property(
        fc.array(itemArb, { maxLength: 20 }),
        fc.constantFrom('messages', 'rows', 'a"\\\u0000😀'),
        hostileString(30),
        budgetsArb,
        (items, arrayKey, cursorPad, budgets) => {
          const rest = pageRest(items.length, cursorPad);
          const pageText = (count: number) =>
            JSON.stringify({ [arrayKey]: items.slice(0, count), ...rest(count) });
          const result = fitJsonPage({ arrayKey, items, budgets, rest });
          expect(result.text).toBe(pageText(result.count));
          expect(JSON.parse(result.text)).toEqual(JSON.parse(pageText(result.count)));
          if (result.count > 0) expect(withinBudgets(result.text, budgets)).toBe(true);
          expect(result.count).toBe(bruteForceCount(items.length, pageText, budgets));
          expect(result.serialized).toHaveLength(items.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
