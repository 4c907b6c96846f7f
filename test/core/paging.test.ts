import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fitBoundedList } from '../../src/core/bounded.js';
import { type CursorBinding, canonicalFilter, decodeCursor, encodeCursor } from '../../src/core/cursor.js';
import { hostileString } from './arbitraries.js';

const secret = new Uint8Array(32).fill(3);
const BUDGET = 2000;
const LIMIT = 20;

interface Candidate {
  message_id: string;
  body: string;
}

interface Page {
  messages: Candidate[];
  nextCursor: string | null;
  omitted: number;
  readContent?: { message_id: string };
}

/**
 * A host's page read as DESIGN.md §3.1 describes it: fetch up to LIMIT candidates after the
 * cursor, return the largest prefix that fits, and when the first one alone does not fit, a
 * locator for it and a cursor past it (I5).
 */
function readPage(all: readonly Candidate[], binding: CursorBinding, cursor: string | null): Page {
  const start = cursor === null ? 0 : (decodeCursor(secret, binding, cursor).last as number) + 1;
  const fetched = all.slice(start, start + LIMIT);
  const cursorAfter = (lastIndex: number) =>
    lastIndex + 1 < all.length ? encodeCursor(secret, binding, { last: lastIndex }) : null;
  const page = fitBoundedList({
    rows: fetched,
    key: 'messages',
    budgets: { utf16: BUDGET },
    page: (_first, count): Page =>
      count === 0 && fetched.length > 0
        ? {
            messages: [],
            nextCursor: cursorAfter(start),
            omitted: fetched.length,
            readContent: { message_id: fetched[0]!.message_id },
          }
        : { messages: [], nextCursor: cursorAfter(start + count - 1), omitted: fetched.length - count },
  });
  expect(page.text.length).toBeLessThanOrEqual(BUDGET);
  const parsed = page.value;
  expect(parsed).toStrictEqual(JSON.parse(page.text));
  if (parsed.readContent !== undefined) {
    // Skipped only because it alone does not fit as the head of its page.
    const alone = {
      messages: fetched.slice(0, 1),
      nextCursor: cursorAfter(start),
      omitted: fetched.length - 1,
    };
    expect(JSON.stringify(alone).length).toBeGreaterThan(BUDGET);
  }
  return parsed;
}

const candidateArb = fc.oneof(
  { weight: 8, arbitrary: hostileString(300) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 4000 }).map((n) => '😀'.repeat(n)) },
);

describe('a cursor chain over fitted pages', () => {
  it('visits every candidate exactly once, in order, skipping an oversized one with a locator', () => {
    fc.assert(
      fc.property(fc.array(candidateArb, { maxLength: 60 }), hostileString(12), (bodies, caller) => {
        const all = bodies.map((body, i) => ({ message_id: `m${i}`, body }));
        const binding = { caller, filter: canonicalFilter({ unread: true }), target: 'inbox:g1' };
        const visited: string[] = [];
        const located: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page = readPage(all, binding, cursor);
          pages += 1;
          expect(pages).toBeLessThanOrEqual(all.length + 1);
          visited.push(...page.messages.map((m) => m.message_id));
          if (page.readContent !== undefined) {
            expect(page.messages).toEqual([]);
            located.push(page.readContent.message_id);
            visited.push(page.readContent.message_id);
          }
          for (const m of page.messages) expect(m).toEqual(all[Number(m.message_id.slice(1))]);
          cursor = page.nextCursor;
        } while (cursor !== null);
        expect(visited).toEqual(all.map((c) => c.message_id));
        expect(located.length).toBeLessThanOrEqual(all.length);
      }),
      { numRuns: 80 },
    );
  });
});
