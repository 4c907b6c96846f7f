import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FuzzReport, fuzzCli } from './fuzz-cli.js';
import { fuzzHook } from './fuzz-hook.js';
import { fuzzMcp } from './fuzz-mcp.js';
import { fuzzRpcPost, fuzzRpcWebSocket } from './fuzz-rpc.js';
import { fuzzTransfer } from './fuzz-transfer.js';
import { fuzzUpload } from './fuzz-upload.js';

// `npm run proof:fuzz [scale] [seed]`: the full bad-input campaign over every surface. `scale`
// multiplies the input counts below (default 1); the seed defaults to the clock and is printed,
// so any failure can be replayed with the same seed.
const scale = Number(process.argv[2] ?? 1);
const seed = Number(process.argv[3] ?? Date.now() % 1_000_000);

async function cli(runs: number, s: number): Promise<FuzzReport> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-fuzz-cli-'));
  try {
    return await fuzzCli(home, runs, s);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** Surface, input count, and the campaign (hooks spawn a process per input: fewer of them). */
const CAMPAIGNS: [string, number, (runs: number, seed: number) => Promise<FuzzReport>][] = [
  ['rpc websocket', 10_000, fuzzRpcWebSocket],
  ['rpc http post', 5_000, fuzzRpcPost],
  ['mcp tools', 20_000, fuzzMcp],
  ['uploads', 3_000, fuzzUpload],
  ['media transfers', 2_000, fuzzTransfer],
  ['hook stdin', 300, fuzzHook],
  ['cli argv', 3_000, cli],
];

process.stdout.write(`bad-input campaign, seed ${seed}, scale ${scale}\n`);
let failed = 0;
let total = 0;
for (const [name, runs, campaign] of CAMPAIGNS) {
  const started = Date.now();
  let report: FuzzReport;
  try {
    report = await campaign(Math.max(1, Math.round(runs * scale)), seed);
  } catch (err) {
    // fast-check rethrows a property that threw: that is a failure of the surface, not the runner.
    report = {
      surface: name,
      inputs: 0,
      failures: [{ input: '(campaign)', problem: String(err).slice(0, 500) }],
    };
  }
  total += report.inputs;
  failed += report.failures.length;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    `${report.surface.padEnd(14)} ${String(report.inputs).padStart(6)} inputs  ${String(report.failures.length).padStart(4)} failures  ${seconds} s\n`,
  );
  for (const f of report.failures.slice(0, 10))
    process.stdout.write(`  ${f.problem}\n    input: ${f.input}\n`);
}
process.stdout.write(`total: ${total} inputs, ${failed} failures\n`);
process.exitCode = failed === 0 ? 0 : 1;
