// A one-line preview cut to its width: the cut fell inside what escaping added, so a preview could
// end in half an escape (`\u20`) or half a surrogate pair (a lone surrogate on the terminal).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isWellFormed } from '../../src/core/text.js';
import { firstLine } from '../../src/surfaces/cli/message-text.js';

const hostile = fc.string({
  unit: fc.oneof(
    fc.constantFrom('\u202e', '\u001b', '\u200b', '\u2028', '\n', '\t', '😀', 'é', 'a', ' '),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
  ),
  maxLength: 200,
});

describe('firstLine', () => {
  it('never ends in half an escape or half a character, and fits its width', () => {
    fc.assert(
      fc.property(hostile, fc.integer({ min: 2, max: 100 }), (text, max) => {
        const line = firstLine(text, max);
        expect(line.length).toBeLessThanOrEqual(max);
        expect(isWellFormed(line)).toBe(true);
        const body = line.endsWith('…') ? line.slice(0, -1) : line;
        // Every backslash-u is a whole escape.
        expect(body).not.toMatch(/\\u(?![0-9a-f]{4})/);
        expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202e]/);
      }),
      { numRuns: 500 },
    );
  });

  it('a short line is kept whole', () => {
    expect(firstLine('hello\nworld', 80)).toBe('hello');
    expect(firstLine('pay \u202etab', 80)).toBe('pay \\u202etab');
  });
});
