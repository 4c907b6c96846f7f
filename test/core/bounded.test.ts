import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Budgets, fitBoundedList, type Keep, withinBudgets } from '../../src/core/bounded.js';
import { withMemberAt } from '../../src/core/json-frame.js';
import { hostileString } from './arbitraries.js';

interface Page {
  status: 'page';
  rows: unknown[];
  next: string | null;
  omitted: number;
  skipped?: undefined;
}

/** A page as hosts build it: the array in the middle, a cursor while rows remain, an omitted count. */
function pageOf(total: number, cursorPad: string) {
  return (first: number, end: number): Page => ({
    status: 'page',
    rows: [],
    next: end < total ? `${cursorPad}${end}` : null,
    omitted: total - (end - first),
  });
}

/** Budgets that bind on pages of a few short rows. */
const budgetsArb: fc.Arbitrary<Budgets> = fc
  .record(
    { utf16: fc.integer({ min: 0, max: 500 }), utf8: fc.integer({ min: 0, max: 800 }) },
    { requiredKeys: [] },
  )
  .filter((b) => b.utf16 !== undefined || b.utf8 !== undefined);

const rowArb = fc.oneof(
  fc.record({ id: hostileString(12), body: hostileString(80), n: fc.integer() }),
  // Rows are plain JSON data (Bounded's contract): a -0 from the generator is 0 once written out,
  // as every reader's numbers already are (positions, sizes, counts).
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown),
  hostileString(30),
);

/** The page's text for the rows [first, end), built the slow way. */
function textFor(rows: readonly unknown[], page: (first: number, end: number) => Page) {
  return (first: number, end: number) =>
    JSON.stringify({ ...page(first, end), rows: rows.slice(first, end) });
}

/** Which rows [first, end) `keep` allows and fit, found by trying every candidate. */
function bruteForce(
  n: number,
  keep: Keep,
  fits: (first: number, end: number) => boolean,
): [number, number] | null {
  const largestFrom = (first: number) => {
    let best = first;
    for (let end = first + 1; end <= n; end++) if (fits(first, end)) best = end;
    return best;
  };
  if (keep === 'prefix') return largestFrom(0) > 0 ? [0, largestFrom(0)] : null;
  if (keep === 'suffix') {
    let best = n;
    for (let first = n - 1; first >= 0; first--) if (fits(first, n)) best = first;
    return best < n ? [best, n] : null;
  }
  for (let first = 0; first <= keep.around; first++) {
    const end = largestFrom(first);
    if (end > keep.around) return [first, end];
  }
  return null;
}

describe('fitBoundedList', () => {
  it('puts the rows in the page exactly as JSON.stringify would, and builds the value from them', () => {
    const rows = [{ a: 1 }, undefined, 'x'];
    const result = fitBoundedList<unknown, Page>({
      rows,
      key: 'rows',
      budgets: { utf16: 1000 },
      page: () => ({ status: 'page', rows: [], next: null, omitted: 0 }),
    });
    expect(result.text).toBe('{"status":"page","rows":[{"a":1},null,"x"],"next":null,"omitted":0}');
    expect(result.text).toBe(JSON.stringify(result.value));
    expect(result.value).toStrictEqual(JSON.parse(result.text));
    expect(result.value.rows[0]).toBe(rows[0]);
    expect(result.rowTexts).toEqual(['{"a":1}', 'null', '"x"']);
    const empty = fitBoundedList<unknown, { rows: unknown[] }>({
      rows: [],
      key: 'rows',
      budgets: { utf8: 0 },
      page: () => ({ rows: [] }),
    });
    expect(empty).toEqual({ text: '{"rows":[]}', value: { rows: [] }, first: 0, end: 0, rowTexts: [] });
  });

  it('refuses page shapes whose text JSON.stringify would not give', () => {
    const base = { rows: [1], budgets: { utf16: 100 } };
    expect(() => fitBoundedList({ ...base, key: '0' as 'rows', page: () => ({ rows: [] }) })).toThrow(
      /cannot split/,
    );
    const withToJSON = () => ({ rows: [] as number[], toJSON: () => ({}) });
    expect(() => fitBoundedList({ ...base, key: 'rows', page: withToJSON })).toThrow(/toJSON/);
  });

  it('serializes each row once and asks for the page a handful of times', () => {
    let calls = 0;
    let pages = 0;
    const rows = Array.from({ length: 50 }, (_, i) => ({
      toJSON: () => {
        calls += 1;
        return { i };
      },
    }));
    fitBoundedList({
      rows,
      key: 'rows',
      budgets: { utf16: 200 },
      page: () => {
        pages += 1;
        return { rows: [] as typeof rows, next: null };
      },
    });
    expect(calls).toBe(50);
    expect(pages).toBeLessThanOrEqual(6);
  });

  it('sends an oversized leading row compact, or refuses with its line', () => {
    const rows = [
      { id: 'a', body: 'x'.repeat(500) },
      { id: 'b', body: 'short' },
    ];
    const compact = (row: { id: string; body: string }) => ({ id: row.id, body: '' });
    const fitRows = (utf8: number, keep: Keep) =>
      fitBoundedList({
        rows,
        key: 'rows',
        budgets: { utf8 },
        keep,
        page: (first, end) => ({ rows: [] as typeof rows, first, end }),
        oversized: { compact, refusal: 'no room for one row' },
      });
    expect(fitRows(100, 'prefix').text).toBe('{"rows":[{"id":"a","body":""}],"first":0,"end":1}');
    expect(fitRows(100, { around: 0 }).value).toEqual({ rows: [{ id: 'a', body: '' }], first: 0, end: 1 });
    expect(fitRows(100, 'suffix').value).toEqual({ rows: [{ id: 'b', body: 'short' }], first: 1, end: 2 });
    expect(() => fitRows(20, 'prefix')).toThrow('no room for one row');
    // Rows over compactOverBytes are compact wherever they stand.
    const always = fitBoundedList({
      rows: [rows[1]!, rows[0]!],
      key: 'rows',
      budgets: { utf8: 10_000 },
      page: () => ({ rows: [] as typeof rows }),
      oversized: { compact, refusal: 'no room', compactOverBytes: 100 },
    });
    expect(always.value.rows).toEqual([rows[1], { id: 'a', body: '' }]);
    expect(always.text).toBe(JSON.stringify(always.value));
  });

  it('keeps the largest run its rule allows, its text is JSON.stringify of its value (property)', () => {
    const keepArb = (n: number): fc.Arbitrary<Keep> =>
      n === 0
        ? fc.constantFrom<Keep>('prefix', 'suffix')
        : fc.oneof(
            fc.constantFrom<Keep>('prefix', 'suffix'),
            fc.integer({ min: 0, max: n - 1 }).map((around) => ({ around })),
          );
    fc.assert(
      fc.property(
        fc
          .array(rowArb, { maxLength: 16 })
          .chain((rows) => fc.tuple(fc.constant(rows), keepArb(rows.length))),
        hostileString(30),
        budgetsArb,
        fc.boolean(),
        ([rows, keep], cursorPad, budgets, withFallback) => {
          const page = pageOf(rows.length, cursorPad);
          const slow = textFor(rows, page);
          const compact = () => 'c';
          let result: ReturnType<typeof fitBoundedList<unknown, Page>>;
          try {
            result = fitBoundedList<unknown, Page>({
              rows,
              key: 'rows',
              budgets,
              page,
              keep,
              ...(withFallback ? { oversized: { compact, refusal: 'too small' } } : {}),
            });
          } catch (err) {
            // Only a fallback that does not fit either is refused.
            expect(withFallback && (err as Error).message === 'too small').toBe(true);
            return;
          }
          expect(result.text).toBe(JSON.stringify(result.value));
          expect(result.value).toEqual(JSON.parse(result.text));
          const best = bruteForce(rows.length, keep, (f, e) => withinBudgets(slow(f, e), budgets));
          if (best !== null) {
            expect([result.first, result.end]).toEqual(best);
            expect(result.text).toBe(slow(best[0], best[1]));
          } else if (rows.length > 0 && withFallback) {
            expect(result.end - result.first).toBe(1);
            expect(result.value.rows).toEqual(['c']);
            expect(withinBudgets(result.text, budgets)).toBe(true);
          } else {
            expect(result.end).toBe(result.first);
          }
        },
      ),
      { numRuns: 600 },
    );
  });
});

describe('withMemberAt', () => {
  it('is the value jsonAround frames: the member replaced along the path, key order kept', () => {
    const value = { a: 1, part: { offset: 3, text: '' }, next: null };
    const out = withMemberAt(value, ['part', 'text'], 'body "quoted"');
    expect(JSON.stringify(out)).toBe('{"a":1,"part":{"offset":3,"text":"body \\"quoted\\""},"next":null}');
    expect(value.part.text).toBe('');
  });
});
