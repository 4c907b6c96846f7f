import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCrashCampaign } from './crash-campaign.js';

// `npm run proof:crash [kills]`: the full campaign (default 300 kills, two workers at a time).
const kills = Number(process.argv[2] ?? 300);
const home = mkdtempSync(join(tmpdir(), 'sluice-crash-'));
const started = Date.now();
try {
  const report = await runCrashCampaign({
    home,
    kills,
    workers: 2,
    maxRunMs: 600,
    seed: Date.now() % 100_000,
  });
  process.stdout.write(
    `crash campaign: ${report.kills} kills, ${report.operations} logged operations, ${report.sent} acknowledged sends, ` +
      `${report.handled} handled, ${report.returned} returned, ${report.archived} archived, ` +
      `${report.violations.length} violations (${((Date.now() - started) / 1000).toFixed(0)} s)\n`,
  );
  for (const v of report.violations.slice(0, 20)) process.stdout.write(`  ${v}\n`);
  process.exitCode = report.violations.length === 0 ? 0 : 1;
} finally {
  rmSync(home, { recursive: true, force: true });
}
