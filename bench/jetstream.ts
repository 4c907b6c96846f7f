import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AckPolicy, connect, type NatsConnection, StorageType } from 'nats';
import type { HostContext } from '../src/host/context.js';
import { initHome, openHost } from '../src/host/home.js';
import { sendMessage } from '../src/host/messages.js';
import { addPrincipal, authenticateToken, issueToken } from '../src/host/principals.js';
import { beginTurn, endTurn } from '../src/host/turns/index.js';
import { startHostServer } from '../src/surfaces/http/server.js';
import { startNatsServer } from './nats-server.js';
import type { BenchResult } from './result.js';
import { HttpPoster, WsRpc } from './sluice-clients.js';
import { storagePerMessage } from './storage.js';

/** A 500-byte chat message: the payload of every send and publish here. */
export const BODY = 'Could you review the invoice export before the deploy? '.repeat(10).slice(0, 500);
/** Read rows use 200-byte bodies: a page of 20 must fit one tool result (12,000 UTF-16 units). */
const READ_BODY = BODY.slice(0, 200);
const SENDS = 800;
const SENDERS = 8;
const READS = 300;
const CYCLES = 120;
const PAGE = 20;

/** CPU ms used meanwhile by this process and, for JetStream, by nats-server. */
type CpuMeter = () => number;
const ownCpuMs: CpuMeter = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** Runs `fn`, returning its result and the CPU ms per `count` operations it used. */
async function cpuPer<T>(meter: CpuMeter, count: number, fn: () => Promise<T>): Promise<[T, number]> {
  const before = meter();
  const result = await fn();
  return [result, (meter() - before) / count];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function timeEach(count: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await fn(i);
    times.push(performance.now() - start);
  }
  return times;
}

/** Per second: `total` operations, `senders` of them at a time, each sender waiting for its acks. */
async function rate(
  total: number,
  senders: number,
  send: (sender: number) => Promise<unknown>,
): Promise<number> {
  const start = performance.now();
  await Promise.all(
    Array.from({ length: senders }, async (_, s) => {
      for (let i = 0; i < total / senders; i++) await send(s);
    }),
  );
  return total / ((performance.now() - start) / 1000);
}

interface JetStreamSide {
  publish1: number;
  publish8: number;
  fetchMs: number;
  /** CPU ms per operation (nats-server and this client): publish (1 sender, 8), fetch-and-ack. */
  cpu: { publish1: number; publish8: number; fetch: number };
  bytesPerMessage: number;
}

async function measureJetStream(url: string, serverCpuMs: CpuMeter): Promise<JetStreamSide> {
  const meter = () => ownCpuMs() + serverCpuMs();
  const ncs: NatsConnection[] = await Promise.all(
    Array.from({ length: SENDERS }, () => connect({ servers: url })),
  );
  try {
    const [nc] = ncs as [NatsConnection];
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: 'BENCH', subjects: ['bench.>'], storage: StorageType.File });
    const payload = new TextEncoder().encode(BODY);
    const js = ncs.map((c) => c.jetstream());
    const publisher = (s: number) => js[s] as (typeof js)[0];
    await rate(50, 1, () => publisher(0).publish('bench.warm', payload));
    const [publish1, cpu1] = await cpuPer(meter, SENDS, () =>
      rate(SENDS, 1, () => publisher(0).publish('bench.one', payload)),
    );
    const [publish8, cpu8] = await cpuPer(meter, SENDS, () =>
      rate(SENDS, SENDERS, (s) => publisher(s).publish('bench.eight', payload)),
    );
    // Only 500-byte messages so far: what one costs in the stream.
    const sent = await jsm.streams.info('BENCH');
    // Fetch 20 and ack them (the acks flushed to the server): what a consumer of a work queue does.
    const readPayload = new TextEncoder().encode(READ_BODY);
    for (let i = 0; i < (READS + 20) * PAGE; i++) await publisher(0).publish('bench.read', readPayload);
    await jsm.consumers.add('BENCH', {
      durable_name: 'reader',
      ack_policy: AckPolicy.Explicit,
      filter_subject: 'bench.read',
    });
    const consumer = await (js[0] as (typeof js)[0]).consumers.get('BENCH', 'reader');
    const fetchAndAck = async () => {
      let got = 0;
      for await (const m of await consumer.fetch({ max_messages: PAGE, expires: 5_000 })) {
        m.ack();
        got++;
      }
      await nc.flush();
      if (got !== PAGE) throw new Error(`JetStream fetch returned ${got}, not ${PAGE}`);
    };
    await timeEach(20, fetchAndAck);
    const [fetchTimes, cpuFetch] = await cpuPer(meter, READS, () => timeEach(READS, fetchAndAck));
    const fetchMs = median(fetchTimes);
    return {
      publish1,
      publish8,
      fetchMs,
      cpu: { publish1: cpu1, publish8: cpu8, fetch: cpuFetch },
      bytesPerMessage: sent.state.bytes / sent.state.messages,
    };
  } finally {
    await Promise.all(ncs.map((c) => c.close()));
  }
}

interface SluiceSide {
  ws1: number;
  ws8: number;
  post1: number;
  post8: number;
  readMs: number;
  cycleMs: number;
  /** CPU ms per operation in this process (host and its clients): as in {@link JetStreamSide}. */
  cpu: { ws1: number; ws8: number; read: number; cycle: number };
  /** Median ms of the parts of a send (see the breakdown row). */
  parts: Record<string, number>;
}

async function measureSluice(ctx: HostContext): Promise<SluiceSide> {
  await addPrincipal(ctx, { name: 'bot', kind: 'agent', settlement: 'turn' });
  const reader = await addPrincipal(ctx, { name: 'reader', kind: 'agent', settlement: 'turn' });
  const owner = await authenticateToken(ctx, await issueToken(ctx, 'owner'));
  if (!owner) throw new Error('no owner');
  const server = await startHostServer({ ctx, port: 0, webRoot: '/nonexistent-web-root', logger: false });
  const poster = new HttpPoster(server.url);
  const ownerToken = await issueToken(ctx, 'owner');
  const readerToken = await issueToken(ctx, 'reader');
  const sockets = await Promise.all(
    Array.from({ length: SENDERS }, () => WsRpc.open(server.url, ownerToken)),
  );
  try {
    const params = { to: 'bot', body: BODY };
    const ws = (s: number) => (sockets[s] as WsRpc).call('message.send', params);
    const post = () => poster.rpc(ownerToken, 'message.send', params);
    await rate(50, 1, () => ws(0));
    await rate(50, 1, post);
    const [ws1, cpuWs1] = await cpuPer(ownCpuMs, SENDS, () => rate(SENDS, 1, () => ws(0)));
    const [ws8, cpuWs8] = await cpuPer(ownCpuMs, SENDS, () => rate(SENDS, SENDERS, ws));
    const post1 = await rate(SENDS, 1, post);
    const post8 = await rate(SENDS, SENDERS, post);
    const parts = {
      'WebSocket message.send': median(await timeEach(300, () => ws(0))),
      'WebSocket host.hello (transport, framing, credential check)': median(
        await timeEach(300, () => (sockets[0] as WsRpc).call('host.hello', {})),
      ),
      'POST message.send': median(await timeEach(300, post)),
      'POST host.hello (transport, framing, auth)': median(
        await timeEach(300, () => poster.rpc(ownerToken, 'host.hello', {})),
      ),
      'credential check (authenticateToken)': median(
        await timeEach(300, () => authenticateToken(ctx, ownerToken)),
      ),
      'sendMessage in the host (validation, SQL, commit)': median(
        await timeEach(300, () => sendMessage(ctx, owner, params)),
      ),
    };
    for (let i = 0; i < (CYCLES + 20) * PAGE + PAGE; i++)
      await sendMessage(ctx, owner, { to: 'reader', body: READ_BODY });
    const read = () => poster.tool(readerToken, 'channel_read', { limit: PAGE });
    await timeEach(20, read);
    const [readTimes, cpuRead] = await cpuPer(ownCpuMs, READS, () => timeEach(READS, read));
    const readMs = median(readTimes);
    const cycle = async () => {
      const turn = await beginTurn(ctx, reader);
      const page = JSON.parse(await read()) as { messages: unknown[] };
      const settled = await endTurn(ctx, reader, turn.id, { ok: true });
      if (page.messages.length !== PAGE || settled.handled.length !== PAGE)
        throw new Error(`a cycle consumed ${settled.handled.length} of ${page.messages.length}`);
    };
    await timeEach(20, cycle);
    const [cycleTimes, cpuCycle] = await cpuPer(ownCpuMs, CYCLES, () => timeEach(CYCLES, cycle));
    const cycleMs = median(cycleTimes);
    const cpu = { ws1: cpuWs1, ws8: cpuWs8, read: cpuRead, cycle: cpuCycle };
    return { ws1, ws8, post1, post8, readMs, cycleMs, cpu, parts };
  } finally {
    for (const s of sockets) s.close();
    poster.close();
    await server.close();
  }
}

const skipped = (name: string, target: string): BenchResult => ({
  name,
  ratio: Number.NaN,
  target,
  ok: true,
  detail: 'skipped: no nats-server',
});

/**
 * Sluice next to NATS JetStream in one run, both on this machine: sends at `normal` durability vs
 * publish-with-ack (1 and 8 senders, WebSocket and POST), a `channel_read` page of 20 over `/mcp`
 * and the consume cycle (turn begin, read, turn end) vs fetch-20-and-ack, and what a message costs
 * on disk. The Sluice host runs in this process (its clients too); nats-server in its own.
 */
export async function benchJetstream(): Promise<BenchResult[]> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-js-'));
  const nats = await startNatsServer();
  try {
    const ctx = await openHost({ home, durability: 'normal' });
    let sluice: SluiceSide;
    try {
      await initHome(ctx);
      sluice = await measureSluice(ctx);
    } finally {
      await ctx.store.close();
    }
    const js = nats ? await measureJetStream(nats.url, nats.cpuMs) : undefined;
    const storage = await storagePerMessage(BODY);
    const rows: BenchResult[] = [];
    const sendRow = (
      label: string,
      sends: number,
      publishes: number | undefined,
      target?: number,
      cpu?: [number, number | undefined],
    ) => {
      const name = `message.send at normal, ${label}, vs JetStream publish-with-ack`;
      const t = target === undefined ? 'reported' : `>= ${target}`;
      if (publishes === undefined) return rows.push(skipped(name, t));
      const ratio = sends / publishes;
      rows.push({
        name,
        ratio,
        target: t,
        ok: target === undefined || ratio >= target,
        detail: `${sends.toFixed(0)} sends/s vs ${publishes.toFixed(0)} publishes/s (${SENDS} each, ${BODY.length}-byte body; JetStream file storage, its default fsync every 2 min)${cpu ? `; CPU per send ${cpu[0].toFixed(2)} ms (host and clients) vs per publish ${cpu[1]?.toFixed(2)} ms (server and client): ${(cpu[1] ?? 0) / cpu[0] >= 0 ? ((cpu[1] ?? 0) / cpu[0]).toFixed(2) : '-'}× by CPU` : ''}`,
      });
    };
    sendRow('one sender over WebSocket', sluice.ws1, js?.publish1, 0.4, [sluice.cpu.ws1, js?.cpu.publish1]);
    sendRow(`${SENDERS} senders over WebSocket`, sluice.ws8, js?.publish8, 0.3, [
      sluice.cpu.ws8,
      js?.cpu.publish8,
    ]);
    sendRow('one sender over POST', sluice.post1, js?.publish1);
    sendRow(`${SENDERS} senders over POST`, sluice.post8, js?.publish8);
    rows.push({
      name: 'message.send over POST vs over WebSocket (one sender; eight)',
      ratio: sluice.post1 / sluice.ws1,
      target: 'reported',
      ok: true,
      detail: `one sender ${(sluice.post1 / sluice.ws1).toFixed(2)}×, ${SENDERS} senders ${(sluice.post8 / sluice.ws8).toFixed(2)}×`,
    });
    rows.push({
      name: 'where a send goes: medians in ms of one sender',
      ratio: sluice.parts['sendMessage in the host (validation, SQL, commit)'] as number,
      target: 'reported',
      ok: true,
      detail: Object.entries(sluice.parts)
        .map(([k, v]) => `${k} ${v.toFixed(3)}`)
        .join('; '),
    });
    const readRow = (name: string, ms: number, cpu: number, target: number, what: string) => {
      if (!js) return rows.push(skipped(name, `<= ${target}`));
      rows.push({
        name,
        ratio: ms / js.fetchMs,
        target: `<= ${target}`,
        ok: ms / js.fetchMs <= target,
        detail: `median ${ms.toFixed(3)} ms vs ${js.fetchMs.toFixed(3)} ms (JetStream: fetch 20 from a durable pull consumer, ack each, flush); CPU ${cpu.toFixed(2)} ms vs ${js.cpu.fetch.toFixed(2)} ms (${(cpu / js.cpu.fetch).toFixed(2)}× by CPU); ${what}`,
      });
    };
    readRow(
      'channel_read page of 20 over /mcp vs JetStream fetch-20-and-ack',
      sluice.readMs,
      sluice.cpu.read,
      1.0,
      `${READS} reads of 20 unread (no open turn: a peek), ${READ_BODY.length}-byte bodies on both sides, one MCP tools/call per read over kept-alive HTTP`,
    );
    readRow(
      'consume cycle (turn begin, channel_read of 20 over /mcp, turn end) vs JetStream fetch-20-and-ack',
      sluice.cycleMs,
      sluice.cpu.cycle,
      2.0,
      `${CYCLES} cycles, each consuming 20 (turn mode); begin and end in the host process (as a driver calls them), the read over /mcp: 3 write transactions (begin, the read's receipt, end) and one HTTP round trip`,
    );
    rows.push({
      name: 'storage bytes per 500-byte message (Sluice; JetStream beside it)',
      ratio: storage.bytesPerMessage / BODY.length,
      target: 'reported',
      ok: true,
      detail: `${storage.bytesPerMessage.toFixed(0)} bytes (${(storage.bytesPerMessage / BODY.length).toFixed(2)}× the body): ${storage.breakdown}; JetStream ${js ? `${js.bytesPerMessage.toFixed(0)} bytes (${(js.bytesPerMessage / BODY.length).toFixed(2)}×)` : 'skipped: no nats-server'}`,
    });
    return rows;
  } finally {
    await nats?.stop();
    rmSync(home, { recursive: true, force: true });
  }
}
