import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AckPolicy, connect, type NatsConnection, StorageType } from 'nats';
import type { HostContext } from '../src/host/identity/context.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, authenticateToken, issueToken } from '../src/host/identity/principals.js';
import { sendMessage } from '../src/host/messages/messages.js';
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
const READS = 600;
const CYCLES = 240;
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

/** One round's measurements of a side: rates per second, median latencies in ms, CPU ms per op. */
interface Round {
  send1: number;
  send8: number;
  read: number;
  cpu: { send1: number; send8: number; read: number };
}

/** The operations of one side, ready to be measured in alternating rounds with the other's. */
interface Side {
  round(): Promise<Round>;
  close(): Promise<void>;
}

/**
 * Rounds per side: each round measures every operation once, the two sides taking turns (the order
 * swapped each round), so a burst of load from elsewhere hits both rather than one.
 */
const ROUNDS = 8;

async function openJetStream(
  url: string,
  serverCpuMs: CpuMeter,
): Promise<Side & { bytesPerMessage(): Promise<number> }> {
  const meter = () => ownCpuMs() + serverCpuMs();
  const ncs: NatsConnection[] = await Promise.all(
    Array.from({ length: SENDERS }, () => connect({ servers: url })),
  );
  const [nc] = ncs as [NatsConnection];
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: 'BENCH', subjects: ['bench.>'], storage: StorageType.File });
  // What a 500-byte message costs on disk is measured in a stream of its own.
  await jsm.streams.add({ name: 'SIZE', subjects: ['size.>'], storage: StorageType.File });
  const payload = new TextEncoder().encode(BODY);
  const js = ncs.map((c) => c.jetstream());
  const publisher = (s: number) => js[s] as (typeof js)[0];
  const readPayload = new TextEncoder().encode(READ_BODY);
  for (let i = 0; i < (READS + 20 * ROUNDS) * PAGE; i++)
    await publisher(0).publish('bench.read', readPayload);
  await jsm.consumers.add('BENCH', {
    durable_name: 'reader',
    ack_policy: AckPolicy.Explicit,
    filter_subject: 'bench.read',
  });
  const consumer = await publisher(0).consumers.get('BENCH', 'reader');
  // Fetch 20 and ack them (the acks flushed to the server): what a consumer of a work queue does.
  const fetchAndAck = async () => {
    let got = 0;
    for await (const m of await consumer.fetch({ max_messages: PAGE, expires: 5_000 })) {
      m.ack();
      got++;
    }
    await nc.flush();
    if (got !== PAGE) throw new Error(`JetStream fetch returned ${got}, not ${PAGE}`);
  };
  await rate(50, 1, () => publisher(0).publish('bench.warm', payload));
  await timeEach(20, fetchAndAck);
  return {
    async round() {
      const [send1, cpu1] = await cpuPer(meter, SENDS, () =>
        rate(SENDS, 1, () => publisher(0).publish('bench.one', payload)),
      );
      const [send8, cpu8] = await cpuPer(meter, SENDS, () =>
        rate(SENDS, SENDERS, (s) => publisher(s).publish('bench.eight', payload)),
      );
      const [times, cpuRead] = await cpuPer(meter, READS / ROUNDS, () =>
        timeEach(READS / ROUNDS, fetchAndAck),
      );
      return { send1, send8, read: median(times), cpu: { send1: cpu1, send8: cpu8, read: cpuRead } };
    },
    async bytesPerMessage() {
      for (let i = 0; i < 200; i++) await publisher(0).publish('size.one', payload);
      const info = await jsm.streams.info('SIZE');
      return info.state.bytes / info.state.messages;
    },
    async close() {
      await Promise.all(ncs.map((c) => c.close()));
    },
  };
}

/** Sluice's extra measurements: POST sends, the consume cycle and where a send's time goes. */
interface SluiceRound extends Round {
  post1: number;
  post8: number;
  cycle: number;
  cpuCycle: number;
}

async function openSluice(ctx: HostContext): Promise<{
  round(): Promise<SluiceRound>;
  parts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}> {
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
  const params = { to: 'bot', body: BODY };
  const ws = (s: number) => (sockets[s] as WsRpc).call('message.send', params);
  const post = () => poster.rpc(ownerToken, 'message.send', params);
  for (let i = 0; i < (CYCLES + 20) * PAGE + PAGE; i++)
    await sendMessage(ctx, owner, { to: 'reader', body: READ_BODY });
  const read = () => poster.tool(readerToken, 'channel_read', { limit: PAGE });
  const cycle = async () => {
    const turn = await beginTurn(ctx, reader);
    const page = JSON.parse(await read()) as { messages: unknown[] };
    const settled = await endTurn(ctx, reader, turn.id, { ok: true });
    if (page.messages.length !== PAGE || settled.handled.length !== PAGE)
      throw new Error(`a cycle consumed ${settled.handled.length} of ${page.messages.length}`);
  };
  await rate(50, 1, () => ws(0));
  await rate(50, 1, post);
  await timeEach(20, read);
  await timeEach(5, cycle);
  return {
    async round() {
      const [send1, cpu1] = await cpuPer(ownCpuMs, SENDS, () => rate(SENDS, 1, () => ws(0)));
      const [send8, cpu8] = await cpuPer(ownCpuMs, SENDS, () => rate(SENDS, SENDERS, ws));
      const post1 = await rate(SENDS / 2, 1, post);
      const post8 = await rate(SENDS / 2, SENDERS, post);
      const [readTimes, cpuRead] = await cpuPer(ownCpuMs, READS / ROUNDS, () =>
        timeEach(READS / ROUNDS, read),
      );
      const [cycleTimes, cpuCycle] = await cpuPer(ownCpuMs, CYCLES / ROUNDS, () =>
        timeEach(CYCLES / ROUNDS, cycle),
      );
      return {
        send1,
        send8,
        read: median(readTimes),
        cpu: { send1: cpu1, send8: cpu8, read: cpuRead },
        post1,
        post8,
        cycle: median(cycleTimes),
        cpuCycle,
      };
    },
    async parts() {
      return {
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
    },
    async close() {
      for (const s of sockets) s.close();
      poster.close();
      await server.close();
    },
  };
}

const skipped = (name: string, target: string): BenchResult => ({
  name,
  ratio: Number.NaN,
  target,
  ok: true,
  detail: 'skipped: no nats-server',
});

/** The median over rounds of `f(sluice round, JetStream round)`. */
const paired = (sl: readonly SluiceRound[], js: readonly Round[], f: (s: SluiceRound, j: Round) => number) =>
  median(sl.map((s, i) => f(s, js[i] as Round)));
const medianOf = <T>(rounds: readonly T[], f: (r: T) => number) => median(rounds.map(f));

/**
 * Sluice next to NATS JetStream in one run, both on this machine: sends at `normal` durability vs
 * publish-with-ack (1 and 8 senders, WebSocket and POST), a `channel_read` page of 20 over `/mcp`
 * and the consume cycle (turn begin, read, turn end) vs fetch-20-and-ack, and what a message costs
 * on disk. The Sluice host runs in this process (its clients too); nats-server in its own. The
 * sides take turns, {@link ROUNDS} rounds each, and every ratio is the median of the rounds' ratios.
 */
export async function benchJetstream(): Promise<BenchResult[]> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-js-'));
  const nats = await startNatsServer();
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    await initHome(ctx);
    const sluice = await openSluice(ctx);
    const jetstream = nats ? await openJetStream(nats.url, nats.cpuMs) : undefined;
    const sl: SluiceRound[] = [];
    const js: Round[] = [];
    let parts: Record<string, number>;
    let jsBytes: number | undefined;
    try {
      for (let r = 0; r < ROUNDS; r++) {
        if (r % 2 === 1 && jetstream) js.push(await jetstream.round());
        sl.push(await sluice.round());
        if (r % 2 === 0 && jetstream) js.push(await jetstream.round());
      }
      parts = await sluice.parts();
      jsBytes = await jetstream?.bytesPerMessage();
    } finally {
      await jetstream?.close();
      await sluice.close();
    }
    const storage = await storagePerMessage(BODY);
    return jetstreamRows({ sl, js: jetstream ? js : undefined, parts, storage, jsBytes });
  } finally {
    await ctx.store.close();
    await nats?.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

function jetstreamRows(m: {
  sl: SluiceRound[];
  js: Round[] | undefined;
  parts: Record<string, number>;
  storage: { bytesPerMessage: number; breakdown: string };
  jsBytes: number | undefined;
}): BenchResult[] {
  const { sl, js } = m;
  const rows: BenchResult[] = [];
  const each = (xs: number[], digits = 0) => xs.map((x) => x.toFixed(digits)).join(', ');
  const sendRow = (label: string, key: 'send1' | 'send8', target?: number) => {
    const name = `message.send at normal, ${label}, vs JetStream publish-with-ack`;
    const t = target === undefined ? 'reported' : `>= ${target}`;
    if (!js) return rows.push(skipped(name, t));
    const ratio = paired(sl, js, (s, j) => s[key] / j[key]);
    const cpu = paired(sl, js, (s, j) => j.cpu[key] / s.cpu[key]);
    rows.push({
      name,
      ratio,
      target: t,
      ok: target === undefined || ratio >= target,
      detail: `rounds: ${each(sl.map((s) => s[key]))} sends/s vs ${each(js.map((j) => j[key]))} publishes/s (${SENDS} each per round, ${BODY.length}-byte body; JetStream file storage, its default fsync every 2 min); CPU per send ${medianOf(sl, (s) => s.cpu[key]).toFixed(2)} ms (host and clients) vs per publish ${medianOf(js, (j) => j.cpu[key]).toFixed(2)} ms (server and client): ${cpu.toFixed(2)}× by CPU`,
    });
  };
  sendRow('one sender over WebSocket', 'send1', 0.4);
  sendRow(`${SENDERS} senders over WebSocket`, 'send8', 0.3);
  const postRow = (label: string, key: 'post1' | 'post8', wsKey: 'send1' | 'send8') => {
    const name = `message.send at normal, ${label}, vs JetStream publish-with-ack`;
    if (!js) return rows.push(skipped(name, 'reported'));
    rows.push({
      name,
      ratio: paired(sl, js, (s, j) => s[key] / j[wsKey]),
      target: 'reported',
      ok: true,
      detail: `rounds: ${each(sl.map((s) => s[key]))} sends/s vs ${each(js.map((j) => j[wsKey]))} publishes/s (${SENDS / 2} sends each per round)`,
    });
  };
  postRow('one sender over POST', 'post1', 'send1');
  postRow(`${SENDERS} senders over POST`, 'post8', 'send8');
  rows.push({
    name: 'message.send over POST vs over WebSocket (one sender; eight)',
    ratio: medianOf(sl, (s) => s.post1 / s.send1),
    target: 'reported',
    ok: true,
    detail: `one sender ${medianOf(sl, (s) => s.post1 / s.send1).toFixed(2)}×, ${SENDERS} senders ${medianOf(sl, (s) => s.post8 / s.send8).toFixed(2)}× (medians over the rounds)`,
  });
  rows.push({
    name: 'where a send goes: medians in ms of one sender',
    ratio: m.parts['sendMessage in the host (validation, SQL, commit)'] as number,
    target: 'reported',
    ok: true,
    detail: Object.entries(m.parts)
      .map(([k, v]) => `${k} ${v.toFixed(3)}`)
      .join('; '),
  });
  const readRow = (name: string, key: 'read' | 'cycle', target: number, what: string) => {
    if (!js) return rows.push(skipped(name, `<= ${target}`));
    const ratio = paired(sl, js, (s, j) => s[key] / j.read);
    const cpuOf = (s: SluiceRound) => (key === 'read' ? s.cpu.read : s.cpuCycle);
    rows.push({
      name,
      ratio,
      target: `<= ${target}`,
      ok: ratio <= target,
      detail: `rounds: median ${each(
        sl.map((s) => s[key]),
        3,
      )} ms vs ${each(
        js.map((j) => j.read),
        3,
      )} ms (JetStream: fetch 20 from a durable pull consumer, ack each, flush); CPU ${medianOf(sl, cpuOf).toFixed(2)} ms vs ${medianOf(js, (j) => j.cpu.read).toFixed(2)} ms (${paired(sl, js, (s, j) => cpuOf(s) / j.cpu.read).toFixed(2)}× by CPU); ${what}`,
    });
  };
  readRow(
    'channel_read page of 20 over /mcp vs JetStream fetch-20-and-ack',
    'read',
    1.0,
    `${READS / ROUNDS} reads of 20 unread per round (no open turn: a peek), ${READ_BODY.length}-byte bodies on both sides, one MCP tools/call per read over kept-alive HTTP`,
  );
  readRow(
    'consume cycle (turn begin, channel_read of 20 over /mcp, turn end) vs JetStream fetch-20-and-ack',
    'cycle',
    2.0,
    `${CYCLES / ROUNDS} cycles per round, each consuming 20 (turn mode); begin and end in the host process (as a driver calls them), the read over /mcp: 3 write transactions (begin, the read's receipt, end) and one HTTP round trip`,
  );
  rows.push({
    name: 'storage bytes per 500-byte message (Sluice; JetStream beside it)',
    ratio: m.storage.bytesPerMessage / BODY.length,
    target: 'reported',
    ok: true,
    detail: `${m.storage.bytesPerMessage.toFixed(0)} bytes (${(m.storage.bytesPerMessage / BODY.length).toFixed(2)}× the body): ${m.storage.breakdown}; JetStream ${m.jsBytes !== undefined ? `${m.jsBytes.toFixed(0)} bytes (${(m.jsBytes / BODY.length).toFixed(2)}×)` : 'skipped: no nats-server'}`,
  });
  return rows;
}
