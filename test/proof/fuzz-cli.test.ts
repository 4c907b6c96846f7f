import { describe, expect, it } from 'vitest';
import { fuzzCli } from '../../proof/fuzz-cli.js';
import { tempHome } from '../support/host.js';

describe('CLI bad-input fuzzing', () => {
  it('answers every generated argv with exit 0/1/2, one clear line, and no change on refusal', {
    timeout: 120_000,
  }, async () => {
    const { home, cleanup } = tempHome();
    // fuzzCli's own restore assigns SLUICE_HOME back, which turns an unset variable into the string
    // 'undefined' for every later file in this worker (isolate: false): unset it again here.
    const savedHome = process.env.SLUICE_HOME;
    try {
      const report = await fuzzCli(home, 150, 7);
      expect(report.inputs).toBe(150);
      expect(report.failures).toEqual([]);
    } finally {
      if (savedHome === undefined) delete process.env.SLUICE_HOME;
      else process.env.SLUICE_HOME = savedHome;
      cleanup();
    }
  });
});
