import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { budgetedSlice, escapedCostAt } from '../../src/core/budgeted-slice.js';
import { utf8Length } from '../../src/core/measure.js';
import { hostileString, splitsSurrogatePair } from './arbitraries.js';

/** The escaped text of a slice as JSON.stringify writes it, without the quotes. */
const escaped = (s: string) => JSON.stringify(s).slice(1, -1);

describe('budgetedSlice: the longest slice whose JSON escape fits', () => {
  it('costs each code point exactly what JSON.stringify writes for it', () => {
    fc.assert(
      fc.property(hostileString(60), (text) => {
        for (let i = 0; i < text.length; ) {
          const cost = escapedCostAt(text, i);
          const piece = escaped(text.slice(i, i + cost.step));
          expect(cost.utf16).toBe(piece.length);
          expect(cost.utf8).toBe(utf8Length(piece));
          i += cost.step;
        }
      }),
    );
  });

  it('fits every budget given, is the longest that does, and never splits a pair', () => {
    fc.assert(
      fc.property(
        hostileString(120),
        fc.nat(40),
        fc.option(fc.nat(300), { nil: undefined }),
        fc.option(fc.nat(300), { nil: undefined }),
        (text, startHint, utf16, utf8) => {
          let start = Math.min(startHint, text.length);
          if (splitsSurrogatePair(text, start)) start -= 1;
          const slice = budgetedSlice(text, start, { utf16, utf8 });
          const piece = escaped(text.slice(start, slice.end));
          expect(slice.utf16).toBe(piece.length);
          expect(slice.utf8).toBe(utf8Length(piece));
          if (utf16 !== undefined) expect(piece.length).toBeLessThanOrEqual(utf16);
          if (utf8 !== undefined) expect(utf8Length(piece)).toBeLessThanOrEqual(utf8);
          expect(splitsSurrogatePair(text, slice.end)).toBe(false);
          if (slice.end < text.length) {
            const next = slice.end + escapedCostAt(text, slice.end).step;
            const grown = escaped(text.slice(start, next));
            const over =
              (utf16 !== undefined && grown.length > utf16) ||
              (utf8 !== undefined && utf8Length(grown) > utf8);
            expect(over).toBe(true);
          }
        },
      ),
    );
  });

  it('keeps a surrogate pair whole or leaves it out', () => {
    expect(budgetedSlice('a😀b', 0, { utf16: 2 }).end).toBe(1);
    expect(budgetedSlice('a😀b', 0, { utf16: 3 }).end).toBe(3);
    expect(budgetedSlice('a😀b', 0, { utf8: 4 }).end).toBe(1);
    expect(budgetedSlice('a😀b', 0, { utf8: 5 }).end).toBe(3);
  });
});
