import { describe, expect, it } from 'vitest';
import { fuzzTransfer } from '../../proof/fuzz-transfer.js';

describe('media transfer fuzzing against a real server', () => {
  it('answers every Range header with 200, 206 (exactly those bytes) or 416, and an upload cut off anywhere leaves nothing', {
    timeout: 120_000,
  }, async () => {
    const report = await fuzzTransfer(200, 12);
    expect(report.failures).toEqual([]);
    expect(report.inputs).toBe(200);
  });
});
