import { describe, expect, it } from 'vitest';
import { runCrashCampaign } from '../../proof/crash-campaign.js';
import { tempHome } from '../support/host.js';

// A bounded run of `npm run proof:crash` (the workers run from dist/, built by `npm test`). Each
// kill costs a worker process's start; 20 kills (10 rounds of two workers killed at random moments,
// seeded) keep every check of the campaign. SLUICE_CRASH_KILLS=30 is the count this test used to run.
const KILLS = Number(process.env.SLUICE_CRASH_KILLS ?? 20);

describe('crash campaign', () => {
  it(`loses nothing acknowledged and consumes nothing unreceived across ${KILLS} SIGKILLs`, {
    timeout: 180_000,
  }, async () => {
    const { home, cleanup } = tempHome('sluice-crash-');
    try {
      const report = await runCrashCampaign({ home, kills: KILLS, workers: 2, maxRunMs: 500, seed: 4242 });
      expect(report.kills).toBe(KILLS);
      // The campaign did send: two sends for every three kills, the ratio the 30-kill run asked for.
      expect(report.sent).toBeGreaterThan(Math.floor((KILLS * 2) / 3));
      expect(report.handled + report.archived).toBeGreaterThan(0);
      expect(report.violations).toEqual([]);
    } finally {
      cleanup();
    }
  });
});
