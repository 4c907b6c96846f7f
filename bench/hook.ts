import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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
const BIN = resolve(import.meta.dirname, '../../bin/sluice.js');

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function timed(args: readonly string[], input: string): number {
  const started = performance.now();
  const run = spawnSync(process.execPath, args, {
    input,
    encoding: 'utf8',
    env: { ...process.env, SLUICE_DB: '' },
  });
  const elapsed = performance.now() - started;
  if (run.status !== 0) throw new Error(`${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  return elapsed;
}

/**
 * `sluice hook claude user-prompt-submit` (a 20-message backlog, the JSON a real prompt sends)
 * against `node -e ""`, interleaved so both see the same machine load; medians of 15 runs.
 */
export async function benchHook(): Promise<BenchResult[]> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-hook-'));
  try {
    const ctx = await openHost({ home, durability: 'normal' });
    try {
      await initHome(ctx);
      await addPrincipal(ctx, { name: 'bot', kind: 'agent', settlement: 'explicit' });
      const owner = await resolvePrincipal(ctx, 'owner');
      for (let i = 0; i < BACKLOG; i++) {
        await sendMessage(ctx, owner, {
          to: 'bot',
          body: `Backlog message ${i}: please review build #${400 + i} ✓`,
        });
      }
    } finally {
      await ctx.store.close();
    }
    const input = JSON.stringify({ hook_event_name: 'UserPromptSubmit', prompt: 'continue', cwd: home });
    const hookArgs = [BIN, 'hook', 'claude', 'user-prompt-submit', '--as', 'bot', '--home', home];
    timed(hookArgs, input); // warm the file cache for both sides
    timed(['-e', ''], '');
    const hook: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      hook.push(timed(hookArgs, input));
      bare.push(timed(['-e', ''], ''));
    }
    const ratio = median(hook) / median(bare);
    return [
      {
        name: 'hook wall time vs node -e ""',
        ratio,
        target: `<= ${TARGET_RATIO}`,
        ok: ratio <= TARGET_RATIO,
        detail: `sluice hook claude user-prompt-submit (${BACKLOG} pending) median ${median(hook).toFixed(1)} ms vs node -e "" ${median(bare).toFixed(1)} ms over ${ROUNDS} interleaved runs`,
      },
    ];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
