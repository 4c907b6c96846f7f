import { describe, expect, it } from 'vitest';
import { fuzzCli } from '../../proof/fuzz-cli.js';
import { tempHome } from '../support/host.js';

describe('CLI bad-input fuzzing', () => {
  it('answers every generated argv with exit 0/1/2, one clear line, and no change on refusal', {
    timeout: 120_000,
  }, async () => {
    const { home, cleanup } = tempHome();
    try {
      const report = await fuzzCli(home, 150, 7);
      expect(report.inputs).toBe(150);
      expect(report.failures).toEqual([]);
    } finally {
      cleanup();
    }
  });
});
