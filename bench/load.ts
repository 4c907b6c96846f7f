import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { createChannel } from '../src/host/channels/channels.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, issueToken, resolvePrincipal } from '../src/host/identity/principals.js';
import { startHostServer } from '../src/surfaces/http/server.js';
import type { BenchResult } from './result.js';

export interface LoadOptions {
  clients: number;
  durationMs: number;
  /** Clients per room (each room is a channel with one agent). */
  roomSize?: number;
  /** `postgres://…` to run on PostgreSQL (a fresh schema, dropped afterwards); SQLite otherwise. */
  db?: string;
  /** CLI processes sending in a loop (`sluice message send`) alongside the WebSocket clients. */
  cliWriters?: number;
}

export interface LoadReport {
  clients: number;
  durationMs: number;
  requests: number;
  errors: number;
  /** Acknowledged sends missing from the database. */
  lostStored: number;
  /** Channel messages a subscriber never heard about (and no resync told it to re-read). */
  lostLive: number;
  sent: number;
  resyncs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Messages the CLI writers had acknowledged (printed ids), included in `sent`. */
  cliSent: number;
  /** Resident set size of the host process at the start and at its peak, MiB. */
  rssStartMiB: number;
  rssPeakMiB: number;
}

const SLUICE_BIN = join(import.meta.dirname, '../../bin/sluice.js');

/** Runs `sluice message send` in a loop until the deadline; returns the ids it printed. */
async function cliWriter(
  env: NodeJS.ProcessEnv,
  room: string,
  deadline: number,
  index: number,
): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; performance.now() < deadline; n++) {
    const id = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [SLUICE_BIN, 'message', 'send', room, '-m', `cli ${index} message ${n}`],
        {
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString();
      });
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve(out.trim()) : reject(new Error(`cli writer: ${err.trim()}`)),
      );
    });
    ids.push(id);
  }
  return ids;
}

interface Pending {
  resolve: (reply: { error?: unknown; result?: unknown }) => void;
  started: number;
}

/** One loopback client: one outstanding request at a time, latencies recorded. */
class LoadClient {
  readonly heard = new Set<string>();
  readonly acknowledged: string[] = [];
  resyncs = 0;
  #next = 1;
  readonly #pending = new Map<number, Pending>();

  constructor(
    readonly ws: WebSocket,
    readonly latencies: number[],
  ) {
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as {
        id?: number;
        method?: string;
        params?: { message?: { messageId: string } };
        error?: unknown;
        result?: unknown;
      };
      if (msg.method === 'channel.message' && msg.params?.message)
        this.heard.add(msg.params.message.messageId);
      if (msg.method === 'channel.resync') this.resyncs += 1;
      if (msg.id === undefined) return;
      const pending = this.#pending.get(msg.id);
      if (!pending) return;
      this.#pending.delete(msg.id);
      this.latencies.push(performance.now() - pending.started);
      pending.resolve(msg);
    });
  }

  call(method: string, params: unknown): Promise<{ error?: unknown; result?: unknown }> {
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(id, { resolve, started: performance.now() });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/**
 * `clients` WebSocket clients on loopback, in rooms of `roomSize` people with one agent each, send
 * messages and page their room agent's queue for `durationMs`. Every reply is checked; afterwards
 * every acknowledged message must be stored and heard live by every subscriber in its room.
 */
export async function runLoad(options: LoadOptions): Promise<LoadReport> {
  const roomSize = options.roomSize ?? 20;
  const home = mkdtempSync(join(tmpdir(), 'sluice-load-'));
  const schema = `load_${process.pid}_${Date.now()}`;
  const db = options.db ? `${options.db}${options.db.includes('?') ? '&' : '?'}schema=${schema}` : undefined;
  const ctx = await openHost({ home, db, durability: 'normal', pollMs: 20 });
  const rssStart = process.memoryUsage().rss;
  let rssPeak = rssStart;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  }, 250);
  await initHome(ctx);
  const owner = await resolvePrincipal(ctx, 'owner');
  const server = await startHostServer({ ctx, port: 0, mcp: false, webRoot: join(home, 'no-web') });
  const latencies: number[] = [];
  const clients: { client: LoadClient; room: string; agent: string }[] = [];
  try {
    const rooms = Math.ceil(options.clients / roomSize);
    const roomIds: string[] = [];
    for (let r = 0; r < rooms; r++) {
      await addPrincipal(ctx, { name: `agent-${r}`, kind: 'agent' });
      const members = [`agent-${r}`];
      for (let i = r * roomSize; i < Math.min(options.clients, (r + 1) * roomSize); i++) {
        await addPrincipal(ctx, { name: `user-${i}`, kind: 'person' });
        members.push(`user-${i}`);
      }
      roomIds.push((await createChannel(ctx, owner, { name: `room-${r}`, members })).id);
    }
    const wsUrl = `${server.url.replace(/^http/, 'ws')}/rpc`;
    for (let i = 0; i < options.clients; i++) {
      const token = await issueToken(ctx, `user-${i}`);
      const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` } });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      const room = Math.floor(i / roomSize);
      clients.push({
        client: new LoadClient(ws, latencies),
        room: roomIds[room] as string,
        agent: `agent-${room}`,
      });
    }
    let errors = 0;
    for (const { client, room, agent } of clients) {
      const reply = await client.call('subscribe', { channels: [room], queues: [agent] });
      if (reply.error) errors += 1;
    }
    latencies.length = 0;

    const deadline = performance.now() + options.durationMs;
    let requests = 0;
    const cliEnv = {
      ...process.env,
      SLUICE_HOME: home,
      SLUICE_AS: 'owner',
      ...(db ? { SLUICE_DB: db } : {}),
    };
    const writers = Array.from({ length: options.cliWriters ?? 0 }, (_, w) =>
      cliWriter(cliEnv, roomIds[w % roomIds.length] as string, deadline, w).catch((err: Error) => {
        errors += 1;
        process.stderr.write(`${err.message}\n`);
        return [] as string[];
      }),
    );
    await Promise.all(
      clients.map(async ({ client, room, agent }, index) => {
        for (let n = 0; performance.now() < deadline; n++) {
          const sent = await client.call('message.send', {
            to: room,
            body: `client ${index} message ${n} 😀`,
          });
          requests += 1;
          if (sent.error) errors += 1;
          else client.acknowledged.push((sent.result as { message_id: string }).message_id);
          const page = await client.call('queue.page', { agent, size: 20 });
          requests += 1;
          if (page.error || (page.result as { status?: string }).status !== 'page') errors += 1;
        }
      }),
    );
    const cliIds = await Promise.all(writers);
    const durationMs = options.durationMs;

    // Every acknowledged message is stored, and heard by every subscriber of its room.
    const byRoom = new Map<string, string[]>();
    for (const { client, room } of clients)
      byRoom.set(room, [...(byRoom.get(room) ?? []), ...client.acknowledged]);
    cliIds.forEach((ids, w) => {
      const room = roomIds[w % roomIds.length] as string;
      byRoom.set(room, [...(byRoom.get(room) ?? []), ...ids]);
    });
    const allIds = [...byRoom.values()].flat();
    let stored = 0;
    for (let i = 0; i < allIds.length; i += 500) {
      const rows = await ctx.store.db
        .selectFrom('messages')
        .select('id')
        .where('id', 'in', allIds.slice(i, i + 500))
        .execute();
      stored += rows.length;
    }
    const missingLive = () => {
      let missing = 0;
      for (const { client, room } of clients) {
        if (client.resyncs > 0) continue;
        for (const id of byRoom.get(room) ?? []) if (!client.heard.has(id)) missing += 1;
      }
      return missing;
    };
    const settleBy = performance.now() + 20_000;
    while (missingLive() > 0 && performance.now() < settleBy) await new Promise((r) => setTimeout(r, 50));

    const sorted = [...latencies].sort((a, b) => a - b);
    return {
      clients: options.clients,
      durationMs,
      requests,
      errors,
      lostStored: allIds.length - stored,
      lostLive: missingLive(),
      sent: allIds.length,
      resyncs: clients.reduce((sum, c) => sum + c.client.resyncs, 0),
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      maxMs: sorted[sorted.length - 1] ?? 0,
      cliSent: cliIds.flat().length,
      rssStartMiB: rssStart / 2 ** 20,
      rssPeakMiB: rssPeak / 2 ** 20,
    };
  } finally {
    clearInterval(sampler);
    for (const { client } of clients) client.ws.close();
    await server.close();
    if (db) await ctx.store.db.schema.dropSchema(schema).ifExists().cascade().execute();
    await ctx.store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/** 200 WebSocket clients sending and paging for 30 s on loopback: zero errors and losses, p50/p99. */
export async function benchLoad(): Promise<BenchResult[]> {
  const r = await runLoad({ clients: 200, durationMs: 30_000 });
  const failures = r.errors + r.lostStored + r.lostLive;
  const detail = `${r.clients} clients, ${r.durationMs / 1000} s: ${r.requests} requests (${Math.round(r.requests / (r.durationMs / 1000))}/s), ${r.sent} messages sent, ${r.errors} errors, ${r.lostStored} lost stored, ${r.lostLive} lost live, ${r.resyncs} resyncs; reply latency p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms, max ${r.maxMs.toFixed(1)} ms`;
  return [
    {
      name: 'load: errors + lost messages (200 WebSocket clients, 30 s)',
      ratio: failures,
      target: '= 0',
      ok: failures === 0,
      detail,
    },
    {
      name: 'load: p99 reply latency in ms',
      ratio: r.p99Ms,
      target: '<= 1000',
      ok: r.p99Ms <= 1000,
      detail: `p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms`,
    },
  ];
}
