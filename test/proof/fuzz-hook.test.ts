// Spawns the built CLI: run `npm run build` first.
import { describe, expect, it } from 'vitest';
import { fuzzHook } from '../../proof/fuzz-hook.js';

describe('hook stdin bad-input fuzzing through the built CLI', () => {
  it('exits 0 with empty or valid hook JSON, at most one stderr line, and no state change for every stdin', {
    timeout: 120_000,
  }, async () => {
    const report = await fuzzHook(60, 41);
    expect(report.inputs).toBe(60);
    expect(report.failures).toEqual([]);
  });
});
