import { describe, expect, it } from 'vitest';
import { runCrashCampaign } from '../../proof/crash-campaign.js';
import { tempHome } from '../support/host.js';

// A bounded run of `npm run proof:crash` (the workers run from dist/, built by `npm test`).
describe('crash campaign', () => {
  it('loses nothing acknowledged and consumes nothing unreceived across 30 SIGKILLs', {
    timeout: 180_000,
  }, async () => {
    const { home, cleanup } = tempHome('sluice-crash-');
    try {
      const report = await runCrashCampaign({ home, kills: 30, workers: 2, maxRunMs: 500, seed: 4242 });
      expect(report.kills).toBe(30);
      expect(report.sent).toBeGreaterThan(20);
      expect(report.handled + report.archived).toBeGreaterThan(0);
      expect(report.violations).toEqual([]);
    } finally {
      cleanup();
    }
  });
});
