import { describe, expect, it } from 'vitest';
import { fuzzMcp, mcpErrorProblems } from '../../proof/fuzz-mcp.js';

describe('MCP tool-argument bad-input fuzzing through the official client', () => {
  it('refuses wrong types, unknown names, hostile strings and tampered, foreign or expired cursors with a bounded JSON error and no change', {
    timeout: 120_000,
  }, async () => {
    const report = await fuzzMcp(300, 21);
    expect(report.inputs).toBe(300);
    expect(report.failures).toEqual([]);
  });
});

describe('the MCP error checker the campaign relies on', () => {
  it('accepts only {"error":{"code","message"}} within the budget', () => {
    expect(mcpErrorProblems('{"error":{"code":"invalid_params","message":"m"}}', 12_000)).toEqual([]);
    expect(mcpErrorProblems('Invalid arguments for tool', 12_000)).not.toEqual([]);
    expect(mcpErrorProblems('{"error":{"code":"internal","message":"m"}}', 12_000)).not.toEqual([]);
    expect(mcpErrorProblems('{"error":{"code":"x","message":"m"},"body":"leak"}', 12_000)).not.toEqual([]);
    expect(mcpErrorProblems(`{"error":{"code":"x","message":"${'m'.repeat(12_000)}"}}`, 12_000)).not.toEqual(
      [],
    );
  });
});
