import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type FitFrame, fitLargestPrefix } from '../../src/core/fit.js';
import { measure, type Unit } from '../../src/core/measure.js';
import { fitBudgets as budgetsArb, hostileString } from './arbitraries.js';

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
