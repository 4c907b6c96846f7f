import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf8Length } from '../../src/core/measure.js';
import { cutUtf8 } from '../../src/core/preview.js';
import { hostileString, splitsSurrogatePair } from './arbitraries.js';

describe('cutUtf8', () => {
  it('keeps short text whole and says it was not truncated', () => {
    expect(cutUtf8('héllo', 6)).toEqual({ text: 'héllo', truncated: false });
    expect(cutUtf8('', 0)).toEqual({ text: '', truncated: false });
  });

  it('never cuts a surrogate pair in half', () => {
    expect(cutUtf8('a😀', 4)).toEqual({ text: 'a', truncated: true });
    expect(cutUtf8('a😀', 5)).toEqual({ text: 'a😀', truncated: false });
    expect(cutUtf8('\ud800x', 3)).toEqual({ text: '\ud800', truncated: true });
  });

  it('returns the longest code-point prefix within the byte limit, for any text', () => {
    fc.assert(
      fc.property(hostileString(120), fc.integer({ min: -2, max: 300 }), (s, maxBytes) => {
        const { text, truncated } = cutUtf8(s, maxBytes);
        expect(s.startsWith(text)).toBe(true);
        expect(truncated).toBe(text.length < s.length);
        expect(utf8Length(text)).toBeLessThanOrEqual(Math.max(0, maxBytes));
        expect(splitsSurrogatePair(s, text.length)).toBe(false);
        if (truncated) {
          // One more code point would not fit.
          const next = String.fromCodePoint(s.codePointAt(text.length)!);
          const grown = s.slice(0, text.length + next.length);
          expect(utf8Length(grown)).toBeGreaterThan(maxBytes);
        }
      }),
    );
  });
});
