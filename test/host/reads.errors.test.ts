import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { errorText, errorTextFor } from '../../src/host/reads/index.js';
import { hostileString, splitsSurrogatePair } from '../core/arbitraries.js';

describe('error results within the budget', () => {
  it('fit any message into any budget, keep the code, and never split a surrogate pair', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          hostileString(200),
          hostileString(20).map((s) => s.repeat(2_000)),
        ),
        fc.integer({ min: 60, max: 13_000 }),
        (message, budget) => {
          const text = errorText('invalid_params', message, budget);
          expect(text.length).toBeLessThanOrEqual(budget);
          const parsed = JSON.parse(text) as { error: { code: string; message: string } };
          expect(parsed.error.code).toBe('invalid_params');
          if (parsed.error.message === message) return;
          const kept = parsed.error.message.slice(0, -1);
          expect(parsed.error.message.endsWith('…')).toBe(true);
          expect(message.startsWith(kept)).toBe(true);
          expect(splitsSurrogatePair(message, kept.length)).toBe(false);
        },
      ),
    );
  });

  it('keeps a user error’s code and hides a bug’s details', () => {
    expect(JSON.parse(errorTextFor(new SluiceError('not_member', 'no'), 100).text)).toEqual({
      error: { code: 'not_member', message: 'no' },
    });
    const bug = errorTextFor(new TypeError('secret stack details'), 12_000);
    expect(bug.code).toBe('internal');
    expect(bug.text).not.toContain('secret');
  });
});
