import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal } from '../src/host/identity/principals.js';

export interface CampaignOptions {
  home: string;
  kills: number;
  /** Concurrent workers per round (each is killed). */
  workers: number;
  /** Upper bound of the random time a worker runs before its SIGKILL. */
  maxRunMs: number;
  seed: number;
}

export interface CampaignReport {
  kills: number;
  operations: number;
  sent: number;
  handled: number;
  archived: number;
  returned: number;
  violations: string[];
}

// The worker always runs compiled (from dist/), also when this module is loaded from source by tests.
const WORKER = join(
  import.meta.dirname,
  basename(dirname(import.meta.dirname)) === 'dist' ? '.' : '../dist/proof',
  'crash-worker.js',
);

function runWorker(
  home: string,
  logPath: string,
  seed: number,
  runMs: number,
  agent: string,
  agents: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, home, logPath, String(seed), agent, String(agents)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.once('data', () => setTimeout(() => child.kill('SIGKILL'), runMs));
    child.on('error', reject);
    child.on('close', (_code, signal) =>
      signal === 'SIGKILL'
        ? resolve()
        : reject(new Error(`worker ended on its own: ${stderr.slice(0, 2000)}`)),
    );
  });
}

/** Prepares a home with the owner and one `turn`-mode agent per worker (bot0, bot1, …). */
export async function prepareCampaignHome(home: string, agents: number): Promise<void> {
  const ctx = await openHost({ home });
  try {
    await initHome(ctx);
    for (let i = 0; i < agents; i++)
      await addPrincipal(ctx, { name: `bot${i}`, kind: 'agent', settlement: 'turn' });
  } finally {
    await ctx.store.close();
  }
}

/** Checks the store against the operation log: I4, I3, unique receipts, counters, integrity. */
export function checkAgainstLog(home: string, logPath: string): Omit<CampaignReport, 'kills'> {
  const lines = readFileSync(logPath, 'utf8').split('\n');
  const sent = new Map<string, string>(); // id -> agent name
  const received = new Map<string, Set<string>>(); // turn -> ids
  const endedOk = new Set<string>();
  const endedFailed = new Set<string>();
  const archiving = new Set<string>();
  for (const line of lines) {
    const [kind, a, b] = line.split(' ');
    if (kind === 'sent' && a && b) sent.set(a, b);
    else if (kind === 'received' && a && b) {
      if (!received.has(a)) received.set(a, new Set());
      received.get(a)?.add(b);
    } else if (kind === 'ending' && b) (a === 'ok' ? endedOk : endedFailed).add(b);
    else if (kind === 'archiving' && a) archiving.add(a);
  }
  const receivedIn = (turns: Set<string>, id: string) => [...turns].some((t) => received.get(t)?.has(id));

  const db = new BetterSqlite3(join(home, 'sluice.db'), { readonly: true });
  const violations: string[] = [];
  try {
    const integrity = db.pragma('integrity_check', { simple: true });
    if (integrity !== 'ok') violations.push(`integrity_check: ${String(integrity)}`);
    const entries = db
      .prepare(
        'select i.message_id as id, i.state as state, p.name as agent from inbox i join principals p on p.id = i.agent_id',
      )
      .all() as { id: string; state: string; agent: string }[];
    const present = new Set(entries.map((e) => `${e.agent} ${e.id}`));
    for (const [id, agent] of sent) {
      if (!present.has(`${agent} ${id}`))
        violations.push(`I4: acknowledged message ${id} to ${agent} is missing`);
    }
    let handled = 0;
    let archived = 0;
    let returned = 0;
    for (const e of entries) {
      if (e.state === 'handled') {
        handled++;
        if (!receivedIn(endedOk, e.id))
          violations.push(`I3: ${e.id} handled without complete receipt in a successful turn`);
      } else if (e.state === 'returned') {
        returned++;
        if (!receivedIn(endedFailed, e.id))
          violations.push(`I3: ${e.id} returned without a failed turn that carried it`);
      } else if (e.state === 'archived') {
        archived++;
        if (!archiving.has(e.id)) violations.push(`I3: ${e.id} archived without an archive request`);
      }
    }
    const dupReceipts = db
      .prepare(
        'select agent_id, message_id, count(*) as n from receipts group by agent_id, message_id having n > 1',
      )
      .all();
    if (dupReceipts.length > 0) violations.push(`duplicate receipts: ${dupReceipts.length}`);
    const q = db.prepare('select waiting, returned from queues').all() as {
      waiting: number;
      returned: number;
    }[];
    const counts = db.prepare('select state, count(*) as n from inbox group by state').all() as {
      state: string;
      n: number;
    }[];
    const count = (s: string) => counts.find((c) => c.state === s)?.n ?? 0;
    const sum = q.reduce(
      (acc, r) => ({ waiting: acc.waiting + r.waiting, returned: acc.returned + r.returned }),
      {
        waiting: 0,
        returned: 0,
      },
    );
    if (sum.waiting !== count('waiting') || sum.returned !== count('returned')) {
      violations.push(
        `counters drifted: ${JSON.stringify(sum)} vs rows waiting=${count('waiting')} returned=${count('returned')}`,
      );
    }
    const opens = db
      .prepare(
        "select agent_id, count(*) as n from turns where state = 'open' group by agent_id having n > 1",
      )
      .all();
    if (opens.length > 0) violations.push(`${opens.length} agents with more than one open turn`);
    return {
      operations: lines.filter((l) => l !== '').length,
      sent: sent.size,
      handled,
      archived,
      returned,
      violations,
    };
  } finally {
    db.close();
  }
}

/** Runs rounds of workers killed with SIGKILL at random moments, then checks everything. */
export async function runCrashCampaign(options: CampaignOptions): Promise<CampaignReport> {
  await prepareCampaignHome(options.home, options.workers);
  const logPath = join(options.home, 'operations.log');
  let seed = options.seed;
  let kills = 0;
  while (kills < options.kills) {
    const round = [];
    for (let w = 0; w < options.workers && kills < options.kills; w++, kills++) {
      seed = (seed * 48271) % 2147483647;
      round.push(
        runWorker(options.home, logPath, seed, 20 + (seed % options.maxRunMs), `bot${w}`, options.workers),
      );
    }
    await Promise.all(round);
  }
  return { kills, ...checkAgainstLog(options.home, logPath) };
}
