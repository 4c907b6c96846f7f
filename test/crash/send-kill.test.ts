import { spawn } from 'node:child_process';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { addPrincipal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { listInbox } from '../../src/host/queue/inbox.js';
import { tempHome } from '../support/host.js';

const WORKER = join(import.meta.dirname, 'send-worker.mjs');

/** Runs the worker until it has printed `minIds` ids plus a random extra delay, then SIGKILLs it. */
function sendUntilKilled(home: string, minIds: number, extraMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, home, 'full'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let buffer = '';
    let killing = false;
    const ids: string[] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) if (line !== 'ready' && line !== '') ids.push(line);
      if (!killing && ids.length >= minIds) {
        killing = true;
        setTimeout(() => child.kill('SIGKILL'), extraMs);
      }
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    // Only ids whose whole line arrived count as acknowledged; a torn last line is not an ack.
    child.on('close', (_code, signal) =>
      signal === 'SIGKILL' ? resolve(ids) : reject(new Error(`worker exited on its own: ${stderr}`)),
    );
  });
}

describe('crash safety (I4)', () => {
  const { home, cleanup } = tempHome();

  beforeAll(async () => {
    const ctx = await openHost({ home });
    await initHome(ctx);
    await addPrincipal(ctx, { name: 'bot', kind: 'agent' });
    await ctx.store.close();
  });
  afterAll(cleanup);

  it('loses no message whose id a killed sender printed', { timeout: 120_000 }, async () => {
    const acknowledged: string[] = [];
    for (let round = 0; round < 8; round++) {
      acknowledged.push(...(await sendUntilKilled(home, 3 + round * 2, Math.floor(Math.random() * 80))));
    }
    expect(acknowledged.length).toBeGreaterThanOrEqual(8 * 3);

    const ctx = await openHost({ home });
    try {
      const bot = await resolvePrincipal(ctx, 'bot');
      const inbox = await listInbox(ctx, bot, { limit: 10_000 });
      const present = new Set(inbox.map((r) => r.projection.message_id));
      const lost = acknowledged.filter((id) => !present.has(id));
      expect(lost).toEqual([]);
      // Positions stay strictly increasing with no duplicate entries after every crash.
      const positions = inbox.map((r) => r.entry.position);
      expect([...positions].sort((a, b) => a - b)).toEqual(positions);
      expect(new Set(positions).size).toBe(positions.length);
      expect(new Set(inbox.map((r) => r.entry.message_id)).size).toBe(inbox.length);
    } finally {
      await ctx.store.close();
    }
    const raw = new BetterSqlite3(join(home, 'sluice.db'), { readonly: true });
    try {
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
      const counters = raw.prepare('select waiting, pending_person from queues').get() as {
        waiting: number;
        pending_person: number;
      };
      const rows = raw.prepare("select count(*) as n from inbox where state = 'waiting'").get() as {
        n: number;
      };
      expect(counters.waiting).toBe(rows.n);
      expect(counters.pending_person).toBe(rows.n);
    } finally {
      raw.close();
    }
  });
});
