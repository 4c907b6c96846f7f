import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveRange } from '../../src/surfaces/http/range.js';

describe('resolveRange', () => {
  it.each([
    [undefined, 100, 'full'],
    ['bytes=0-9', 100, { start: 0, end: 9 }],
    ['bytes=90-', 100, { start: 90, end: 99 }],
    ['bytes=90-500', 100, { start: 90, end: 99 }],
    ['bytes=-10', 100, { start: 90, end: 99 }],
    ['bytes=-500', 100, { start: 0, end: 99 }],
    ['bytes=100-', 100, 'unsatisfiable'],
    ['bytes=-0', 100, 'unsatisfiable'],
    ['bytes=0-', 0, 'unsatisfiable'],
    ['bytes=9-0', 100, 'full'],
    ['bytes=0-1,5-6', 100, 'full'],
    ['items=0-1', 100, 'full'],
    ['bytes=-', 100, 'full'],
    ['bytes=99999999999999999999-', 100, 'full'],
  ] as const)('%s of %i bytes → %j', (header, size, expected) => {
    expect(resolveRange(header, size)).toEqual(expected);
  });

  it('never names a byte outside the representation', () => {
    fc.assert(
      fc.property(fc.string(), fc.nat(10_000), (suffix, size) => {
        const r = resolveRange(`bytes=${suffix}`, size);
        if (typeof r === 'string') return;
        expect(r.start).toBeGreaterThanOrEqual(0);
        expect(r.start).toBeLessThanOrEqual(r.end);
        expect(r.end).toBeLessThan(size);
      }),
    );
    fc.assert(
      fc.property(fc.nat(10_000), fc.nat(10_000), fc.nat(10_000), (a, b, size) => {
        const r = resolveRange(`bytes=${a}-${b}`, size);
        if (a >= size && b >= a) expect(r).toBe('unsatisfiable');
        if (typeof r !== 'string') expect(r).toEqual({ start: a, end: Math.min(b, size - 1) });
      }),
    );
  });
});
