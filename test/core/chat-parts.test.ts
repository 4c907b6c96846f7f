import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitIntoParts } from '../../src/core/chat-parts.js';
import { hostileString, splitsSurrogatePair } from './arbitraries.js';

describe('splitIntoParts', () => {
  it('keeps a body that fits as one part, the empty body included', () => {
    expect(splitIntoParts('hello', 4096)).toEqual(['hello']);
    expect(splitIntoParts('', 4096)).toEqual(['']);
  });

  it('cuts after a line break in the second half of the window', () => {
    expect(splitIntoParts('aaaa\nbbbbbb', 8)).toEqual(['aaaa\n', 'bbbbbb']);
  });

  it('cuts mid-line only when no line break is near, and never inside a surrogate pair', () => {
    expect(splitIntoParts('a\nbbbbbbbbbb', 8)).toEqual(['a\nbbbbbb', 'bbbb']);
    expect(splitIntoParts('abc😀def', 4)).toEqual(['abc', '😀de', 'f']);
  });

  it('gives parts within the cap whose concatenation is the body, for any text', () => {
    fc.assert(
      fc.property(
        fc.oneof(hostileString(400), fc.string({ unit: 'binary', maxLength: 2000 })),
        fc.integer({ min: 2, max: 64 }),
        (body, max) => {
          const parts = splitIntoParts(body, max);
          expect(parts.join('')).toBe(body);
          let offset = 0;
          for (const part of parts) {
            expect(part.length).toBeLessThanOrEqual(max);
            if (parts.length > 1) expect(part.length).toBeGreaterThan(0);
            offset += part.length;
            if (offset < body.length) expect(splitsSurrogatePair(body, offset)).toBe(false);
          }
        },
      ),
    );
  });

  it('refuses a cap that could not hold a surrogate pair', () => {
    expect(() => splitIntoParts('x', 1)).toThrow(RangeError);
  });
});
