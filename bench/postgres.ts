import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createChannel } from '../src/host/channels/channels.js';
import type { HostContext } from '../src/host/identity/context.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../src/host/identity/principals.js';
import { loadProjections, sendMessage } from '../src/host/messages/messages.js';
import { listActiveChannelIds } from '../src/store/ops/channels.js';
import { listInboxEntries } from '../src/store/ops/inbox.js';
import { findMessagesBySeqs } from '../src/store/ops/messages.js';
import type { BenchResult } from './result.js';

const PG_URL = process.env.SLUICE_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BODY = 'Could you look at the failing invoice export? The CSV has a stray quote in row 14 — thanks! 😀';
const SEQUENTIAL_SENDS = 200;
const CONCURRENT_SENDS = 200;
const WRITERS = 8;
const PAGE = 20;

interface Measured {
  sequentialPerSecond: number;
  concurrentPerSecond: number;
  /** pg_stat_activity samples of the store's sessions during the concurrent sends (PostgreSQL). */
  concurrentWaits?: Map<string, number>;
  /** CPU during the concurrent sends, in cores: this process and the PostgreSQL server. */
  concurrentCpu?: { node: number; server: number };
  /** CPU ms per send (this process; the server's sessions of this store and its background processes). */
  sequentialCpuMs: { node: number; server: number };
  concurrentCpuMs: { node: number; server: number };
  pageMs: number[];
  /** A trivial query through the same store (pool, Kysely, driver): one round trip. */
  roundTripMs: number[];
}

/** Queries one unread page makes: channel ids, inbox keyset page, message rows, authors. */
const PAGE_QUERIES = 4;

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** One `channel_read`-style unread page: a keyset inbox page plus its projections. */
async function readPage(ctx: HostContext, agent: Principal, after: number): Promise<number> {
  const db = ctx.store.db;
  const channelIds = await listActiveChannelIds(db, agent.id);
  const entries = await listInboxEntries(db, agent.id, { channelIds, afterPosition: after, limit: PAGE + 1 });
  const rows = await findMessagesBySeqs(
    db,
    entries.slice(0, PAGE).map((e) => e.message_seq),
  );
  await loadProjections(db, rows);
  return entries.length > PAGE ? (entries[PAGE - 1]?.position ?? 0) : 0;
}

/** Sends (sequential DMs, then concurrent channel fan-out to 4 agents) and pages, on one backend. */
async function measure(ctx: HostContext, applicationName?: string): Promise<Measured> {
  await initHome(ctx);
  const owner = await resolvePrincipal(ctx, 'owner');
  const agents: Principal[] = [];
  for (const name of ['a0', 'a1', 'a2', 'a3']) agents.push(await addPrincipal(ctx, { name, kind: 'agent' }));
  await createChannel(ctx, owner, { name: 'load', members: agents.map((a) => a.name) });
  await sendMessage(ctx, owner, { to: 'a0', body: 'warm up' });

  // Every connection the senders will use is open before the server's processes are listed.
  await Promise.all(
    Array.from({ length: WRITERS }, () => ctx.store.db.selectFrom('meta').select('key').execute()),
  );
  const server = applicationName === undefined ? [] : await serverPids(applicationName);
  const [seqNode0, seqServer0] = [process.cpuUsage(), cpuMs(server)];
  let start = performance.now();
  for (let i = 0; i < SEQUENTIAL_SENDS; i++) await sendMessage(ctx, owner, { to: 'a0', body: BODY });
  const sequentialPerSecond = SEQUENTIAL_SENDS / ((performance.now() - start) / 1000);
  const seqNode = process.cpuUsage(seqNode0);
  const sequentialCpuMs = {
    node: (seqNode.user + seqNode.system) / 1000 / SEQUENTIAL_SENDS,
    server: (cpuMs(server) - seqServer0) / SEQUENTIAL_SENDS,
  };

  const stopSampling = applicationName === undefined ? undefined : startWaitSampler(applicationName);
  const [node0, server0] = [process.cpuUsage(), cpuMs(server)];
  start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < CONCURRENT_SENDS) {
        next++;
        await sendMessage(ctx, owner, { to: '#load', body: BODY });
      }
    }),
  );
  const wall = performance.now() - start;
  const concurrentPerSecond = CONCURRENT_SENDS / (wall / 1000);
  const nodeCpu = process.cpuUsage(node0);
  const concurrentCpu = {
    node: (nodeCpu.user + nodeCpu.system) / 1000 / wall,
    server: (cpuMs(server) - server0) / wall,
  };
  const concurrentCpuMs = {
    node: (nodeCpu.user + nodeCpu.system) / 1000 / CONCURRENT_SENDS,
    server: (cpuMs(server) - server0) / CONCURRENT_SENDS,
  };
  const concurrentWaits = await stopSampling?.();

  // Pages and trivial queries alternate, so both see the same machine load.
  const pageMs: number[] = [];
  const roundTripMs: number[] = [];
  const a0 = agents[0] as Principal;
  for (let walk = 0; walk < 3; walk++) {
    let after = 0;
    do {
      let t = performance.now();
      await ctx.store.db.selectFrom('meta').select('key').where('key', '=', 'cursor_secret').execute();
      roundTripMs.push(performance.now() - t);
      t = performance.now();
      after = await readPage(ctx, a0, after);
      pageMs.push(performance.now() - t);
    } while (after !== 0);
  }
  return {
    sequentialPerSecond,
    concurrentPerSecond,
    concurrentWaits,
    concurrentCpu,
    sequentialCpuMs,
    concurrentCpuMs,
    pageMs,
    roundTripMs,
  };
}

async function onSqlite(dir: string): Promise<Measured> {
  const ctx = await openHost({ home: join(dir, 'sqlite'), durability: 'full' });
  try {
    return await measure(ctx);
  } finally {
    await ctx.store.close();
  }
}

async function onPostgres(dir: string): Promise<Measured> {
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const url = new URL(PG_URL);
  url.searchParams.set('schema', schema);
  url.searchParams.set('application_name', schema);
  try {
    const ctx = await openHost({ home: join(dir, 'postgres'), db: url.toString() });
    try {
      return await measure(ctx, schema);
    } finally {
      await ctx.store.close();
    }
  } finally {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`drop schema if exists "${schema}" cascade`);
    await admin.end();
  }
}

const HOST_SENDERS = 16;
const HOST_SENDS = 960;
const HOST_CHILD = '--sluice-bench-pg-host';

/** Parent → child: run `sends` sends from `senders` concurrent senders, sender i DMing `names[i]`. */
interface HostOrder {
  url: string;
  home: string;
  names: string[];
  sends: number;
}

/** CPU time (ms) the given processes used so far (from /proc; 0 for one that has ended). */
function cpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Ended meanwhile: its time is lost to both readings alike.
    }
  }
  return ticks * 10;
}

/**
 * The server processes that work for this bench: the sessions named `applicationName` and the
 * server's own background processes (WAL writer, checkpointer, …). Not every `postgres` process:
 * the server is shared, and other people's sessions on it would count as this bench's cost.
 */
async function serverPids(applicationName: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: PG_URL, application_name: 'sluice-bench-pids' });
  await client.connect();
  try {
    const r = await client.query<{ pid: number }>(
      `select pid from pg_stat_activity where application_name = $1 or backend_type <> 'client backend'`,
      [applicationName],
    );
    return r.rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

/** Busy and total CPU time (ms) of the whole machine, from /proc/stat. */
function machineMs(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: (total - idle) * 10, total: total * 10 };
}

/**
 * What the hosts' server sessions are doing, sampled every few ms from pg_stat_activity (on its own
 * connection): on the server's CPU, waiting for a row lock (Lock), for the WAL flush (IO WALSync /
 * LWLock WALWrite), or idle, i.e. waiting for the Node process to send the next statement.
 */
function startWaitSampler(applicationName: string): () => Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const client = new pg.Client({ connectionString: PG_URL, application_name: 'sluice-bench-sampler' });
  let stop = false;
  const done = (async () => {
    await client.connect();
    while (!stop) {
      const r = await client.query<{ what: string }>(
        `select case when state = 'active' then coalesce(wait_event_type || ':' || wait_event, 'CPU')
           else coalesce(state, '?') end as what
         from pg_stat_activity where application_name = $1`,
        [applicationName],
      );
      for (const row of r.rows) counts.set(row.what, (counts.get(row.what) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await client.end();
  })();
  return async () => {
    stop = true;
    await done;
    return counts;
  };
}

function waitSummary(counts: Map<string, number>): string {
  const total = [...counts.values()].reduce((a, b) => a + b, 0) || 1;
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .filter(([, n]) => n / total >= 0.02)
    .map(([what, n]) => `${what} ${((100 * n) / total).toFixed(0)}%`)
    .join(', ');
}

interface HostsRun {
  perSecond: number;
  /** CPU over the run, in cores (ms of CPU per ms of wall time). */
  nodeCores: number;
  serverCores: number;
  machineCores: number;
  waits: Map<string, number>;
}

/** The child side: one host (its own process, pool 10) and its share of the senders, in-process. */
async function hostChild(): Promise<void> {
  const order = await new Promise<HostOrder>((resolve) =>
    process.once('message', (m) => resolve(m as HostOrder)),
  );
  const host = await openHost({ home: order.home, db: order.url });
  const owner = await resolvePrincipal(host, 'owner');
  // Warm every connection of the pool and the plans before the clock starts.
  await Promise.all(order.names.map((to) => sendMessage(host, owner, { to, body: 'warm up' })));
  process.send?.('ready');
  await new Promise((resolve) => process.once('message', resolve));
  let next = 0;
  await Promise.all(
    order.names.map(async (to) => {
      while (next < order.sends) {
        next++;
        await sendMessage(host, owner, { to, body: BODY });
      }
    }),
  );
  process.send?.('done');
  await new Promise((resolve) => process.once('message', resolve));
  await host.store.close();
  process.disconnect();
}

/** Sends per second from 16 senders, each DMing its own agent, spread over `hostCount` host processes. */
async function hostsThroughput(
  url: string,
  dir: string,
  hostCount: number,
  round: number,
): Promise<HostsRun> {
  const setup = await openHost({ home: join(dir, `setup-${hostCount}-${round}`), db: url });
  const names = Array.from({ length: HOST_SENDERS }, (_, i) => `r${round}h${hostCount}x${i}`);
  try {
    for (const name of names) await addPrincipal(setup, { name, kind: 'agent' });
  } finally {
    await setup.store.close();
  }
  const here = fileURLToPath(import.meta.url);
  const children = Array.from({ length: hostCount }, () => fork(here, [HOST_CHILD], { stdio: 'inherit' }));
  const message = (child: ChildProcess, expected: string) =>
    new Promise<void>((resolve, reject) => {
      child.once('message', (m) =>
        m === expected ? resolve() : reject(new Error(`host said ${String(m)}`)),
      );
      child.once('exit', (code) => reject(new Error(`host process exited (${code})`)));
    });
  try {
    const ready = children.map((c) => message(c, 'ready'));
    for (const [i, child] of children.entries()) {
      child.send({
        url,
        home: join(dir, `h${hostCount}-${round}-${i}`),
        names: names.filter((_, j) => j % hostCount === i),
        sends: HOST_SENDS / hostCount,
      } satisfies HostOrder);
    }
    await Promise.all(ready);
    const server = await serverPids(new URL(url).searchParams.get('application_name') ?? '');
    const nodePids = children.map((c) => c.pid ?? 0);
    const stopSampling = startWaitSampler(new URL(url).searchParams.get('application_name') ?? '');
    const done = children.map((c) => message(c, 'done'));
    const [server0, node0, machine0] = [cpuMs(server), cpuMs(nodePids), machineMs()];
    const start = performance.now();
    for (const child of children) child.send('go');
    await Promise.all(done);
    const wall = performance.now() - start;
    const [server1, node1, machine1] = [cpuMs(server), cpuMs(nodePids), machineMs()];
    const waits = await stopSampling();
    const exited = children.map((c) => new Promise((resolve) => c.once('exit', resolve)));
    for (const child of children) child.send('close');
    await Promise.all(exited);
    const cores = machine1.total - machine0.total; // all cores' ms; per-core wall = total / cores
    const coreCount = cpus().length;
    return {
      perSecond: HOST_SENDS / (wall / 1000),
      nodeCores: (node1 - node0) / wall,
      serverCores: (server1 - server0) / wall,
      machineCores: ((machine1.busy - machine0.busy) / cores) * coreCount,
      waits,
    };
  } catch (err) {
    for (const child of children) child.kill();
    throw err;
  }
}

/**
 * One PostgreSQL host process against two on one database, 16 senders either way, alternated twice
 * (one, two, one, two) so both see the same machine; the totals give the ratio.
 */
async function twoHostsVsOne(dir: string): Promise<{ one: HostsRun[]; two: HostsRun[] }> {
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const url = new URL(PG_URL);
  url.searchParams.set('schema', schema);
  url.searchParams.set('application_name', schema);
  try {
    const init = await openHost({ home: join(dir, 'hosts-init'), db: url.toString() });
    await initHome(init);
    await init.store.close();
    const one: HostsRun[] = [];
    const two: HostsRun[] = [];
    for (let round = 0; round < 2; round++) {
      one.push(await hostsThroughput(url.toString(), dir, 1, round));
      two.push(await hostsThroughput(url.toString(), dir, 2, round));
    }
    return { one, two };
  } finally {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`drop schema if exists "${schema}" cascade`);
    await admin.end();
  }
}

/**
 * PostgreSQL next to SQLite (synchronous=FULL; PostgreSQL with its default synchronous_commit, so
 * both fsync each acknowledged send), in one run on this machine: send throughput one at a time
 * and with 8 concurrent writers fanning out to 4 agents, and the latency of a channel_read-style
 * unread page (keyset inbox page of 20 plus projections).
 */
export async function benchPostgres(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-pg-'));
  try {
    const lite = await onSqlite(dir);
    const post = await onPostgres(dir);
    const load = loadavg()[0] ?? 0;
    const hosts = await twoHostsVsOne(dir);
    const total = (runs: HostsRun[]) => runs.reduce((a, r) => a + r.perSecond, 0);
    const scale = total(hosts.two) / total(hosts.one);
    const cpu = (runs: HostsRun[]) => {
      const n = runs.length;
      const avg = (f: (r: HostsRun) => number) => (runs.reduce((a, r) => a + f(r), 0) / n).toFixed(2);
      const waits = new Map<string, number>();
      for (const r of runs) for (const [k, v] of r.waits) waits.set(k, (waits.get(k) ?? 0) + v);
      const perSend = (f: (r: HostsRun) => number) =>
        (runs.reduce((a, r) => a + (1000 * f(r)) / r.perSecond, 0) / n).toFixed(2);
      return `CPU in cores: Node ${avg((r) => r.nodeCores)}, PostgreSQL ${avg((r) => r.serverCores)}, machine ${avg((r) => r.machineCores)} of ${cpus().length}; CPU ms per send: Node ${perSend((r) => r.nodeCores)}, PostgreSQL ${perSend((r) => r.serverCores)}; server sessions ${waitSummary(waits)}`;
    };
    // What the CPU a send costs allows on an otherwise idle machine: one host's Node process is
    // one thread (at most 1000/node sends/s), and every host and the server share the cores.
    const costs = [...hosts.one, ...hosts.two];
    const nodeMs = costs.reduce((a, r) => a + (1000 * r.nodeCores) / r.perSecond, 0) / costs.length;
    const serverMs = costs.reduce((a, r) => a + (1000 * r.serverCores) / r.perSecond, 0) / costs.length;
    const machineBound = (1000 * cpus().length) / (nodeMs + serverMs);
    const oneHostBound = Math.min(1000 / nodeMs, machineBound);
    // The bound the two-host row is held to: what the CPU left to this bench allows at these costs.
    // Other work on the machine (other people's builds and tests; the server is on the same cores)
    // is whatever the machine did beyond the hosts and their server processes; the rest could have
    // gone to sends. Each host is one Node thread, so two hosts also stop at 2000/Node.
    const bounds = hosts.two.map((r) => {
      const node = (1000 * r.nodeCores) / r.perSecond;
      const server = (1000 * r.serverCores) / r.perSecond;
      const others = Math.max(0, r.machineCores - r.nodeCores - r.serverCores);
      const available = Math.max(0, cpus().length - others);
      return {
        perSecond: Math.min((2 * 1000) / node, (available * 1000) / (node + server)),
        others,
        available,
      };
    });
    const bound = bounds.reduce((a, b) => a + b.perSecond, 0);
    const ofBound = total(hosts.two) / bound;
    const boundDetail = bounds
      .map(
        (b, i) =>
          `run ${i + 1}: ${hosts.two[i]?.perSecond.toFixed(0)} of ${b.perSecond.toFixed(0)} sends/s (other work ${b.others.toFixed(2)} cores, ${b.available.toFixed(2)} left)`,
      )
      .join('; ');
    const ceiling = `On an idle ${cpus().length}-core machine these costs allow one host ${oneHostBound.toFixed(0)} sends/s (min of 1000/Node and ${cpus().length}000/(Node+PostgreSQL)) and any number of hosts ${machineBound.toFixed(0)}: at most ${(machineBound / oneHostBound).toFixed(2)}×`;
    const perSecond = (runs: HostsRun[]) => runs.map((r) => r.perSecond.toFixed(0)).join(' and ');
    const seq = post.sequentialPerSecond / lite.sequentialPerSecond;
    const conc = post.concurrentPerSecond / lite.concurrentPerSecond;
    // A page on PostgreSQL is bounded below by its round trips; what the code adds on top of them
    // is what this measures (on SQLite every call is in-process, so the raw ratio mostly measures
    // the loopback socket, and is reported in the detail).
    const p50 = percentile(post.pageMs, 50) / (PAGE_QUERIES * percentile(post.roundTripMs, 50));
    const p95 = percentile(post.pageMs, 95) / (PAGE_QUERIES * percentile(post.roundTripMs, 95));
    const ms = (v: number) => `${v.toFixed(2)} ms`;
    const costs2 = (m: { node: number; server: number }) =>
      `CPU ms per send: Node ${m.node.toFixed(2)}, PostgreSQL ${m.server.toFixed(2)}`;
    return [
      {
        name: `two PostgreSQL hosts, ${HOST_SENDERS} concurrent senders, vs the CPU bound (the sends/s the CPU left to them allows at their CPU per send)`,
        ratio: ofBound,
        target: '>= 0.9',
        ok: ofBound >= 0.9,
        detail: `${boundDetail}; bound = min(2000/Node ms, cores left × 1000/(Node + PostgreSQL ms)) per send, from each run's own CPU per send (/proc: the host processes; the server's sessions of this bench and its background processes); cores left = ${cpus().length} − (machine − hosts − server). Two hosts: ${cpu(hosts.two)}`,
      },
      {
        name: `two PostgreSQL hosts vs one, ${HOST_SENDERS} concurrent senders (each DMs its own agent)`,
        ratio: scale,
        target: 'reported',
        ok: true,
        detail: `${perSecond(hosts.two)} vs ${perSecond(hosts.one)} sends/s (${HOST_SENDS} per run, one/two alternated twice); each host its own Node process (pool 10) with its share of the senders in-process; the server on the same ${cpus().length} cores; load average ${load.toFixed(1)} before. One host: ${cpu(hosts.one)}. Two hosts: ${cpu(hosts.two)}. ${ceiling}`,
      },
      {
        name: 'PostgreSQL vs SQLite send throughput, one sender (DM, 1 agent)',
        ratio: seq,
        target: 'reported',
        ok: true,
        detail: `${post.sequentialPerSecond.toFixed(0)} vs ${lite.sequentialPerSecond.toFixed(0)} sends/s (${SEQUENTIAL_SENDS} each); PostgreSQL ${costs2(post.sequentialCpuMs)}; SQLite (in-process, synchronous=FULL) ${lite.sequentialCpuMs.node.toFixed(2)} ms; a PostgreSQL send is 2 resolving reads plus one round trip (the sluice_send statement, committing on its own) and a WAL flush, SQLite's is in-process with an fsync`,
      },
      {
        name: `PostgreSQL vs SQLite send throughput, ${WRITERS} concurrent senders (channel, 4 agents)`,
        ratio: conc,
        target: 'reported',
        ok: true,
        detail: `${post.concurrentPerSecond.toFixed(0)} vs ${lite.concurrentPerSecond.toFixed(0)} sends/s (${CONCURRENT_SENDS} each); PostgreSQL ${costs2(post.concurrentCpuMs)}, CPU in cores: Node ${post.concurrentCpu?.node.toFixed(2)}, PostgreSQL ${post.concurrentCpu?.server.toFixed(2)}; server sessions ${waitSummary(post.concurrentWaits ?? new Map())}; SQLite ${lite.concurrentCpuMs.node.toFixed(2)} ms of CPU per send (group commit: one transaction and fsync per group); load average ${load.toFixed(1)}`,
      },
      {
        name: `PostgreSQL channel_read unread page latency, median, vs its ${PAGE_QUERIES} round trips`,
        ratio: p50,
        target: '<= 3',
        ok: p50 <= 3,
        detail: `${ms(percentile(post.pageMs, 50))} per page (SQLite ${ms(percentile(lite.pageMs, 50))}); one round trip ${ms(percentile(post.roundTripMs, 50))}; ${post.pageMs.length} pages of ${PAGE}; load average ${load.toFixed(1)}`,
      },
      {
        name: `PostgreSQL channel_read unread page latency, p95, vs its ${PAGE_QUERIES} round trips`,
        ratio: p95,
        target: '<= 3',
        ok: p95 <= 3,
        detail: `${ms(percentile(post.pageMs, 95))} per page (SQLite ${ms(percentile(lite.pageMs, 95))}); one round trip ${ms(percentile(post.roundTripMs, 95))}`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// `fork` runs this module again as a host process (bench/run.ts passes module names, never this flag).
if (process.argv[2] === HOST_CHILD) {
  hostChild().catch((err: unknown) => {
    process.stderr.write(`bench host: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
