import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, resolvePrincipal } from '../src/host/identity/principals.js';
import { sendMessage } from '../src/host/messages/messages.js';
import type { BenchResult } from './result.js';

const TARGET_RATIO = 2.5;
const ROUNDS = 15;
const BACKLOG = 20;
const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/sluice.js');

// Each child reports its own CPU time (user + system, all threads) on fd 3 as it exits; the same
// preload runs on both sides, so it cancels out of the ratio.
const REPORT_CPU = `data:text/javascript,import{writeSync}from'node:fs';process.on('exit',()=>{const u=process.cpuUsage();writeSync(3,String((u.user+u.system)/1000))})`;

interface Sample {
  wallMs: number;
  cpuMs: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function run(args: readonly string[], env: NodeJS.ProcessEnv): Sample {
  const started = performance.now();
  const child = spawnSync(process.execPath, ['--import', REPORT_CPU, ...args], {
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env,
  });
  const wallMs = performance.now() - started;
  if (child.status !== 0) throw new Error(`${args.join(' ')} exited ${child.status}: ${child.stderr}`);
  return { wallMs, cpuMs: Number(String(child.output[3])) };
}

/** Which CLI entry bin/sluice.js runs: the bundle when it is as new as the compiled sources. */
function entryInUse(): string {
  const at = (path: string) => statSync(join(ROOT, path), { throwIfNoEntry: false })?.mtimeMs;
  const bundled = at('dist/cli/main.js');
  return bundled !== undefined && bundled >= (at('dist/src/surfaces/cli/main.js') ?? 0)
    ? 'the bundle (dist/cli)'
    : 'the unbundled dist/src (run npm run build for the bundle)';
}

/**
 * Start-up cost of the model's shell path: `sluice message ls`, `read`, `send` and
 * `reply --archive` (repeated: idempotent) against `node -e ""`, interleaved so every command sees
 * the same machine load; medians of 15 rounds, wall time and CPU time.
 */
export async function benchCliStart(): Promise<BenchResult[]> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-cli-'));
  try {
    let firstId: string;
    const ctx = await openHost({ home, durability: 'normal' });
    try {
      await initHome(ctx);
      await addPrincipal(ctx, { name: 'bot', kind: 'agent', settlement: 'explicit' });
      const owner = await resolvePrincipal(ctx, 'owner');
      const ids: string[] = [];
      for (let i = 0; i < BACKLOG; i++) {
        const sent = await sendMessage(ctx, owner, {
          to: 'bot',
          body: `Backlog message ${i}: please review build #${400 + i} ✓`,
        });
        ids.push(sent.message_id);
      }
      firstId = ids[0] as string;
    } finally {
      await ctx.store.close();
    }
    const env = { ...process.env, SLUICE_HOME: home, SLUICE_AS: 'bot', SLUICE_DB: '' };
    const commands: Record<string, string[]> = {
      'message ls': [BIN, 'message', 'ls'],
      'message read': [BIN, 'message', 'read', firstId],
      'message send': [BIN, 'message', 'send', 'owner', '-m', 'status: build green'],
      'message reply --archive': [BIN, 'message', 'reply', firstId, '-m', 'done', '--archive'],
    };
    const bare = ['-e', ''];
    run(bare, env); // warm the file cache for every side
    for (const args of Object.values(commands)) run(args, env);
    const baseline: Sample[] = [];
    const samples: Record<string, Sample[]> = Object.fromEntries(Object.keys(commands).map((k) => [k, []]));
    for (let i = 0; i < ROUNDS; i++) {
      baseline.push(run(bare, env));
      for (const [name, args] of Object.entries(commands)) samples[name]?.push(run(args, env));
    }
    const entry = entryInUse();
    const measure = (what: 'wallMs' | 'cpuMs', label: string): BenchResult => {
      const base = median(baseline.map((s) => s[what]));
      const ratios = Object.entries(samples).map(([name, list]) => ({
        name,
        ms: median(list.map((s) => s[what])),
      }));
      const worst = ratios.reduce((a, b) => (b.ms > a.ms ? b : a));
      const ratio = worst.ms / base;
      return {
        name: `cli-start: slowest sluice message command, ${label} vs node -e ""`,
        ratio,
        target: `<= ${TARGET_RATIO}`,
        ok: ratio <= TARGET_RATIO,
        detail: `${ratios.map((r) => `${r.name} ${(r.ms / base).toFixed(2)}x`).join(', ')}; node -e "" ${base.toFixed(1)} ms; medians of ${ROUNDS} interleaved runs through ${entry}`,
      };
    };
    return [measure('wallMs', 'wall time'), measure('cpuMs', 'CPU time')];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
