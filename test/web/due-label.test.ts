// A field report: an approval card due in 10 minutes read "denied by itself Dec 2, 2026 if nobody
// answers", one due within 45 s "just now". A due time now reads as the wait left.
import { describe, expect, it } from 'vitest';
import { dueLabel } from '../../web/src/time-labels.js';

const now = Date.parse('2026-12-02T12:00:00Z');
const inMs = (ms: number) => new Date(now + ms);

describe('dueLabel', () => {
  it('says how long is left, in the unit a person would', () => {
    expect(dueLabel(inMs(10 * 60_000), now, 'en')).toBe('in 10 minutes');
    expect(dueLabel(inMs(90 * 60_000), now, 'en')).toBe('in 90 minutes');
    expect(dueLabel(inMs(3 * 3_600_000), now, 'en')).toBe('in 3 hours');
    expect(dueLabel(inMs(7 * 86_400_000), now, 'en')).toBe('in 7 days');
    expect(dueLabel(inMs(30_000), now, 'en')).toBe('within a minute');
    expect(dueLabel(inMs(0), now, 'en')).toBe('now');
    expect(dueLabel(inMs(-5_000), now, 'en')).toBe('now');
  });
});
