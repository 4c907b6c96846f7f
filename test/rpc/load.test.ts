import { describe, expect, it } from 'vitest';
import { runLoad } from '../../bench/load.js';

describe('load on loopback', () => {
  it('200 WebSocket clients sending and paging for 5 s: zero errors, zero lost messages', async () => {
    const report = await runLoad({ clients: 200, durationMs: 5_000 });
    console.log(
      `load: ${report.requests} requests, ${report.sent} messages, p50 ${report.p50Ms.toFixed(1)} ms, p99 ${report.p99Ms.toFixed(1)} ms, resyncs ${report.resyncs}`,
    );
    expect(report.sent).toBeGreaterThan(200);
    expect(report.errors).toBe(0);
    expect(report.lostStored).toBe(0);
    expect(report.lostLive).toBe(0);
  }, 120_000);
});
