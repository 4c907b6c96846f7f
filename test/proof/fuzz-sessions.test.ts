import { describe, expect, it } from 'vitest';
import { fuzzSessions } from '../../proof/fuzz-sessions.js';

describe('sign-in bad-input fuzzing (Host, Origin, Sec-Fetch-Site, codes, cookies, bearer values)', () => {
  it('never 5xx, always the security headers, 421 off the allow-list, a session only for a fresh code posted from this origin, no secret echoed', {
    timeout: 180_000,
  }, async () => {
    const report = await fuzzSessions(300, 12);
    expect(report.inputs).toBe(300);
    expect(report.failures.slice(0, 5)).toEqual([]);
  });
});
