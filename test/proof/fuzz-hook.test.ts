// Every generated stdin runs in-process through runHookCli (the entry bin/sluice.js routes
// `sluice hook` to); every 10th, and the pipe edge cases, also through the built CLI in a child
// process: run `npm run build` first. SLUICE_FUZZ_HOOK_SPAWN_EVERY=1 sends all of them through the
// binary too (as `npm run proof:fuzz` does, with 300 inputs).
import { describe, expect, it } from 'vitest';
import { fuzzHook } from '../../proof/fuzz-hook.js';

const SPAWN_EVERY = Number(process.env.SLUICE_FUZZ_HOOK_SPAWN_EVERY) || 10;

describe('hook stdin bad-input fuzzing, in process and through the built CLI', () => {
  it('exits 0 with empty or valid hook JSON, at most one stderr line, and no state change for every stdin', {
    timeout: 120_000,
  }, async () => {
    const report = await fuzzHook(60, 41, SPAWN_EVERY);
    expect(report.inputs).toBe(60);
    expect(report.spawned).toBeGreaterThanOrEqual(Math.ceil(60 / SPAWN_EVERY));
    expect(report.failures).toEqual([]);
  });
});
