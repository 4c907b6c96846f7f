// The rule the page shares with the CLI, the driver and Telegram (src/core/reveal-invisible.ts):
// whatever the text, no bidi control survives, and prose keeps its line breaks, tabs and joiners.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { revealInvisible } from '../../src/core/reveal-invisible.js';
import { hostileString } from './arbitraries.js';

// Every Unicode bidi formatting character: embeddings, overrides, isolates and the marks.
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
const withBidi = fc
  .array(
    fc.oneof(hostileString(), fc.constantFrom('\u202e', '\u2067', '\u200f', '\u061c', '\n', '\t', '\u200d')),
  )
  .map((parts) => parts.join(''));

describe('revealInvisible', () => {
  it('leaves no bidi control in any mode', () => {
    fc.assert(
      fc.property(withBidi, (text) => {
        for (const options of [{}, { keepNewlines: true }, { prose: true }])
          expect(BIDI.test(revealInvisible(text, options))).toBe(false);
      }),
    );
  });

  it('prose differs from the strict rule only in the whitespace and joiners it keeps', () => {
    fc.assert(
      fc.property(withBidi, (text) => {
        const kept = /[\n\t\r\u200c\u200d]/gu;
        const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
        expect(revealInvisible(revealInvisible(text, { prose: true }))).toBe(revealInvisible(text));
        expect(revealInvisible(text, { prose: true }).replace(kept, escaped)).toBe(revealInvisible(text));
      }),
    );
  });

  it('changes nothing in text without invisible characters', () => {
    expect(revealInvisible('line one\n\tline two 👩‍👧 کتاب‌ها', { prose: true })).toBe(
      'line one\n\tline two 👩‍👧 کتاب‌ها',
    );
  });
});
