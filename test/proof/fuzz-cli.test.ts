import { describe, expect, it } from 'vitest';
import { fuzzCli } from '../../proof/fuzz-cli.js';
import { tempHome } from '../support/host.js';

describe('CLI bad-input fuzzing', () => {
  it('answers every generated argv with exit 0/1/2, one clear line, and no change on refusal', {
    timeout: 120_000,
  }, async () => {
    const { home, cleanup } = tempHome();
    const before = { SLUICE_HOME: process.env.SLUICE_HOME, SLUICE_AS: process.env.SLUICE_AS };
    try {
      const report = await fuzzCli(home, 150, 7);
      expect(report.inputs).toBe(150);
      expect(report.failures).toEqual([]);
    } finally {
      cleanup();
    }
    // Later files share this worker (isolate: false): the fuzzer leaves the environment as it was,
    // unset variables unset (it once stored the string 'undefined').
    expect({ SLUICE_HOME: process.env.SLUICE_HOME, SLUICE_AS: process.env.SLUICE_AS }).toEqual(before);
  });
});
