import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels.js';
import type { HostContext } from '../../src/host/context.js';
import { initHome, openHost } from '../../src/host/home.js';
import { archiveMessages } from '../../src/host/inbox.js';
import { addPrincipal, issueToken, type Principal } from '../../src/host/principals.js';
import { isDeliverable, queueSummary } from '../../src/host/queue.js';
import { channelRead, type PageResult } from '../../src/host/reads.js';
import { beginTurn, endTurn, receivedInProcess } from '../../src/host/turns/index.js';
import { runCli, tempHome } from '../support/host.js';
import { type Backend, backendsUnderTest, dropSchema, freshSchemaUrl, withAdmin } from './backend.js';
import {
  RpcError,
  retryStaleSocket,
  rpc,
  type ServeProcess,
  type Subscriber,
  serialized,
  staleSocket,
  startServe,
  subscribe,
} from './hosts.js';

/**
 * Two `sluice serve` processes on one database under load. The load lasts at least
 * SLUICE_MULTIHOST_SECONDS (default 3 in `npm test`, where the load's sends, not its length, carry
 * the claims: each host's writers, the kill after KILL_AFTER_ACKS and SENDS_AFTER_KILL after it;
 * 20 for the full proof run); what the tests wait for is state they can see (acknowledged sends, a
 * process's exit), never a timer.
 */
const LOAD_MS = Number(process.env.SLUICE_MULTIHOST_SECONDS ?? 3) * 1000;
const WRITERS_PER_HOST = 4;
const AGENTS = ['a0', 'a1', 'a2', 'a3'];
/** Acknowledged sends through the victim before it is killed. */
const KILL_AFTER_ACKS = 8 * WRITERS_PER_HOST;
/** Acknowledged sends each survivor's writer makes after the kill. */
const SENDS_AFTER_KILL = 8;
/**
 * Attempts of one keyed send that answers `unavailable`, or whose connection failed while its
 * host still runs (a keep-alive socket the host closed as the request went out); the idempotency
 * key makes the retry safe, which is the client contract (docs/rpc.md).
 */
const SEND_ATTEMPTS = 3;

interface Ack {
  id: string;
  target: string;
  host: string;
}

interface Side {
  name: string;
  serve: ServeProcess;
  /** An agent-side process on the same database (what MCP/CLI processes are). */
  ctx: HostContext;
  dead: boolean;
}

interface World {
  backend: Backend;
  /** Parent folder of every process's home. */
  home: string;
  db: string | undefined;
  schema: string | undefined;
  admin: HostContext;
  agents: Map<string, Principal>;
  ownerToken: string;
  writerTokens: string[];
  loadChannelId: string;
  sides: Side[];
  /** The agent-side stand-ins' store calls, one at a time (see `serialized`). */
  local: <T>(fn: () => Promise<T>) => Promise<T>;
  cleanups: (() => Promise<void> | void)[];
}

/** Acknowledged sends, archive receipts and errors of one load, and a way to wait on them. */
class Load {
  readonly acks: Ack[] = [];
  readonly receipts: string[] = [];
  readonly errors: string[] = [];
  /** Calls retried after a connection error while their host still ran (diagnostics). */
  readonly reconnects: string[] = [];
  readonly #started = Date.now();
  readonly #waiters: { ready: () => boolean; resolve: () => void }[] = [];

  acked(ack: Ack): void {
    this.acks.push(ack);
    this.#recheck();
  }

  failed(side: Side, err: unknown): void {
    this.errors.push(`${side.name} +${Date.now() - this.#started} ms: ${errorText(err)}`);
    this.#recheck();
  }

  reconnected(side: Side, err: unknown): void {
    this.reconnects.push(`${side.name} +${Date.now() - this.#started} ms: ${errorText(err)}`);
  }

  /** What a failed test prints about the load. */
  summary(): string {
    const hosts = [...new Set(this.acks.map((a) => a.host))];
    return [
      `acknowledged sends: ${hosts.map((h) => `${h} ${this.acksThrough(h)}`).join(', ') || 'none'}; archive receipts ${this.receipts.length}`,
      `errors (${this.errors.length}): ${this.errors.slice(0, 5).join(' | ') || 'none'}`,
      `retried after a connection error (${this.reconnects.length}): ${this.reconnects.slice(0, 5).join(' | ') || 'none'}`,
    ].join('\n');
  }

  acksThrough(host: string): number {
    return this.acks.filter((a) => a.host === host).length;
  }

  /** Resolves once `ready()` holds; rechecked on every acknowledgement and error. */
  when(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ ready, resolve }));
  }

  #recheck(): void {
    for (const w of [...this.#waiters])
      if (w.ready()) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve();
      }
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A stale keep-alive socket while the host's process still runs: the host is alive, the socket was not. */
function hostAliveAfter(side: Side, err: unknown): boolean {
  return staleSocket(err) && side.serve.exitStatus() === undefined;
}

/**
 * One keyed `message.send`, retried (same key) on `unavailable` or on a connection error while
 * its host runs, at most SEND_ATTEMPTS times in all.
 */
async function sendKeyed(
  side: Side,
  token: string,
  params: { to: string; body: string; idempotency_key: string; attachments?: string[] },
  load: Load,
): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await rpc<{ message_id: string }>(side.serve.url, token, 'message.send', params)).message_id;
    } catch (err) {
      if (attempt >= SEND_ATTEMPTS || side.dead) throw err;
      if (hostAliveAfter(side, err)) load.reconnected(side, err);
      else if (!(err instanceof RpcError && err.code === 'unavailable')) throw err;
    }
  }
}

/** What a failed test prints: each host's state, event loop and logs, the load, this process's loop. */
function diagnose(world: World, load: Load | undefined, testLoop: ReturnType<typeof monitorEventLoopDelay>) {
  const hosts = world.sides.map(
    (side) => `--- host ${side.name}${side.dead ? ' (the victim)' : ''}: ${side.serve.diagnosis()}`,
  );
  return [
    `=== multihost diagnosis (${world.backend}) ===`,
    ...hosts,
    `--- load\n${load?.summary() ?? 'not started'}`,
    `--- test process: event loop worst lag ${Math.round(testLoop.max / 1e6)} ms, mean ${Math.round(testLoop.mean / 1e6)} ms`,
  ].join('\n');
}

async function openWorld(backend: Backend): Promise<World> {
  const cleanups: (() => Promise<void> | void)[] = [];
  try {
    return await buildWorld(backend, cleanups);
  } catch (err) {
    await closeWorld({ cleanups } as World).catch(() => undefined);
    throw err;
  }
}

async function buildWorld(backend: Backend, cleanups: (() => Promise<void> | void)[]): Promise<World> {
  const shared = tempHome('sluice-multihost-');
  cleanups.push(shared.cleanup);
  let db: string | undefined;
  let schema: string | undefined;
  if (backend === 'postgres') {
    const target = freshSchemaUrl('multihost');
    db = target.url;
    schema = target.schema;
    cleanups.push(() => dropSchema(target.schema));
  } else {
    db = join(shared.home, 'shared.db');
  }
  // PostgreSQL hosts stand for separate machines (a home each; attachment bytes live in the
  // database). SQLite hosts share a machine, so they share the home its blobs live in.
  const home = (name: string) => {
    const dir = backend === 'postgres' ? join(shared.home, name) : join(shared.home, 'shared-home');
    // Private, as sluice creates a home (else opening it tightens it with a notice on stderr).
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  };
  const admin = await openHost({ home: home('admin'), db, durability: 'normal', pollMs: 10 });
  cleanups.push(() => admin.store.close());
  await initHome(admin);
  const agents = new Map<string, Principal>();
  for (const name of AGENTS) {
    agents.set(
      name,
      await addPrincipal(admin, { name, kind: 'agent', settlement: name === 'a0' ? 'turn' : 'explicit' }),
    );
  }
  const writerTokens: string[] = [];
  for (let i = 0; i < WRITERS_PER_HOST * 2; i++) {
    await addPrincipal(admin, { name: `w${i}`, kind: 'person' });
    writerTokens.push(await issueToken(admin, `w${i}`));
  }
  const owner = { id: '', name: 'owner', kind: 'person' } as Principal;
  const ownerRow = await admin.store.db
    .selectFrom('principals')
    .selectAll()
    .where('name', '=', 'owner')
    .executeTakeFirstOrThrow();
  Object.assign(owner, ownerRow);
  const load = await createChannel(admin, owner, {
    name: 'load',
    members: [...AGENTS, ...writerTokens.map((_, i) => `w${i}`)],
  });
  const ownerToken = await issueToken(admin, 'owner');
  const sides: Side[] = [];
  for (const name of ['A', 'B']) {
    const serve = await startServe({ home: home(`host-${name}`), db });
    cleanups.push(() => serve.stop());
    const ctx = await openHost({ home: home(`agents-${name}`), db, durability: 'normal', pollMs: 10 });
    cleanups.push(() => ctx.store.close());
    sides.push({ name, serve, ctx, dead: false });
  }
  return {
    backend,
    home: shared.home,
    db,
    schema,
    admin,
    agents,
    ownerToken,
    writerTokens,
    loadChannelId: load.id,
    sides,
    local: serialized(),
    cleanups,
  };
}

/** Runs every cleanup even when one fails (a schema must never outlive its test), then reports. */
async function closeWorld(world: World): Promise<void> {
  const failures: unknown[] = [];
  for (const cleanup of [...world.cleanups].reverse()) {
    try {
      await cleanup();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length > 0) throw failures[0];
}

/**
 * Sends until `done(acknowledged)` or its host is killed, recording every acknowledged id. A send
 * answered `unavailable` is retried with the same idempotency key, as a client may; any other
 * failure while the host lives is an error, and a writer whose host stopped answering stops.
 */
async function writer(
  side: Side,
  token: string,
  index: number,
  load: Load,
  done: (acked: number) => boolean,
) {
  const targets = [
    '#load',
    AGENTS[index % AGENTS.length] as string,
    '#load',
    AGENTS[(index + 1) % AGENTS.length] as string,
  ];
  let acked = 0;
  for (let i = 0; !done(acked) && !side.dead; i++) {
    const target = targets[i % targets.length] as string;
    const params = {
      to: target,
      body: `${side.name}/${index}/${i} ✉️ 中文 "q" \\ ${'x'.repeat(i % 50)}`,
      idempotency_key: `${side.name}/${index}/${i}`,
    };
    try {
      const id = await sendKeyed(side, token, params, load);
      acked++;
      load.acked({ id, target, host: side.name });
    } catch (err) {
      if (side.dead) return;
      load.failed(side, err);
      // No retry loop against a host that stopped answering (an unchecked loop once made 12,410).
      if (err instanceof RpcError && err.code === 'connection') return;
    }
  }
}

/**
 * Pages each agent's queue through the host and archives the head through the agent-side
 * process, until `done()` or its host is killed.
 */
async function reader(world: World, side: Side, agents: readonly string[], load: Load, done: () => boolean) {
  while (!done() && !side.dead) {
    for (const name of agents) {
      if (side.dead) return;
      try {
        const readPage = () =>
          rpc<{ status: string; rows?: { messageId: string }[] }>(
            side.serve.url,
            world.ownerToken,
            'queue.page',
            {
              agent: name,
              size: 10,
            },
          );
        // A read is safe to repeat: once, after a connection error while the host runs.
        const page = await readPage().catch((err) => {
          if (side.dead || !hostAliveAfter(side, err)) throw err;
          load.reconnected(side, err);
          return readPage();
        });
        const ids = (page.rows ?? []).slice(0, 3).map((r) => r.messageId);
        if (ids.length === 0 || side.dead) continue;
        const made = await world.local(() =>
          archiveMessages(side.ctx, world.agents.get(name) as Principal, ids),
        );
        for (const r of made) if (!r.already) load.receipts.push(`${name}:${r.id}`);
      } catch (err) {
        if (side.dead) return;
        load.failed(side, err);
        if (err instanceof RpcError && err.code === 'connection') return;
      }
    }
  }
}

/**
 * Every side's writers and reader at once; a reader goes on until every writer of the load has
 * stopped and some archive went through (readers archive what writers sent).
 */
async function runLoad(
  world: World,
  load: Load,
  options: {
    readerAgents: readonly string[];
    /** Each writer's stop rule (given its acknowledged sends so far), made once per writer. */
    writerDone: (side: Side) => (acked: number) => boolean;
  },
  also: Promise<unknown>[] = [],
): Promise<void> {
  let writing = world.sides.length * WRITERS_PER_HOST;
  const writers = world.sides.flatMap((side, s) =>
    Array.from({ length: WRITERS_PER_HOST }, (_, i) =>
      writer(
        side,
        world.writerTokens[s * WRITERS_PER_HOST + i] as string,
        i,
        load,
        stopOnError(load, options.writerDone(side)),
      ).finally(() => {
        writing--;
      }),
    ),
  );
  const readersDone = () => writing === 0 && (load.receipts.length > 0 || load.errors.length > 0);
  await Promise.all([
    ...writers,
    ...world.sides.map((side) => reader(world, side, options.readerAgents, load, readersDone)),
    ...also,
  ]);
}

/** A load that hit an error stops at once (the error is what the test reports). */
function stopOnError(load: Load, done: (acked: number) => boolean): (acked: number) => boolean {
  return (acked) => load.errors.length > 0 || done(acked);
}

/** In a proof run (SLUICE_MULTIHOST_SECONDS set) say what the load amounted to. */
function report(label: string, { acks, receipts, reconnects }: Load) {
  if (!process.env.SLUICE_MULTIHOST_SECONDS) return;
  const by = (host: string) => acks.filter((a) => a.host === host).length;
  process.stdout.write(
    `[multihost] ${label}: ${acks.length} acknowledged sends in ${LOAD_MS / 1000} s (A ${by('A')}, B ${by('B')}), ${receipts.length} archive receipts, ${reconnects.length} calls retried after a connection error\n`,
  );
}

/** Every acknowledged id exactly once in exactly the right inboxes; positions 1..n per agent. */
async function expectConsistent(world: World, acks: readonly Ack[], receipts: readonly string[]) {
  const db = world.admin.store.db;
  const rows = await db.selectFrom('inbox').select(['agent_id', 'message_id', 'position', 'state']).execute();
  const nameOf = new Map([...world.agents].map(([name, p]) => [p.id, name]));
  const holders = new Map<string, string[]>();
  for (const r of rows)
    holders.set(r.message_id, [...(holders.get(r.message_id) ?? []), nameOf.get(r.agent_id) ?? '?']);
  expect(new Set(acks.map((a) => a.id)).size).toBe(acks.length);
  const wrong: string[] = [];
  for (const ack of acks) {
    const expected = ack.target === '#load' ? AGENTS : [ack.target];
    const got = (holders.get(ack.id) ?? []).sort();
    if (JSON.stringify(got) !== JSON.stringify(expected))
      wrong.push(`${ack.id} to ${ack.target}: ${got.join(',')}`);
  }
  expect(wrong).toEqual([]);
  const messages = await db.selectFrom('messages').select('id').execute();
  const stored = new Set(messages.map((m) => m.id));
  expect(acks.filter((a) => !stored.has(a.id))).toEqual([]);
  for (const [name, agent] of world.agents) {
    const positions = rows
      .filter((r) => r.agent_id === agent.id)
      .map((r) => r.position)
      .sort((x, y) => x - y);
    expect(positions, `positions of ${name}`).toEqual(
      Array.from({ length: positions.length }, (_, i) => i + 1),
    );
    const summary = await queueSummary(db, agent);
    const pending = rows.filter(
      (r) => r.agent_id === agent.id && (r.state === 'waiting' || r.state === 'returned'),
    );
    expect(summary.total, `pending counter of ${name}`).toBe(pending.length);
  }
  const stored_receipts = await db.selectFrom('receipts').select(['agent_id', 'message_id']).execute();
  const keys = stored_receipts.map((r) => `${nameOf.get(r.agent_id)}:${r.message_id}`);
  expect(new Set(keys).size).toBe(keys.length);
  // Each receipt was created by exactly one archive call, whichever host's reader got there first.
  expect([...receipts].sort()).toEqual([...keys].sort());
  const archived = rows
    .filter((r) => r.state === 'archived')
    .map((r) => `${nameOf.get(r.agent_id)}:${r.message_id}`);
  expect(archived.sort()).toEqual([...keys].sort());
}

async function openSubscribers(world: World, sides: readonly Side[]): Promise<Map<string, Subscriber>> {
  const subs = new Map<string, Subscriber>();
  for (const side of sides) {
    const sub = await subscribe(side.serve.url, world.ownerToken, {
      channels: [world.loadChannelId],
      queues: AGENTS,
    });
    world.cleanups.push(() => sub.close());
    subs.set(side.name, sub);
  }
  return subs;
}

/** Each live subscriber saw every #load message, including those written through the other host. */
async function expectSubscribersSawAll(subs: Map<string, Subscriber>, acks: readonly Ack[]) {
  const wanted = acks.filter((a) => a.target === '#load');
  for (const [name, sub] of subs) {
    const other = wanted.filter((a) => a.host !== name);
    expect(other.length, `writes through the host other than ${name}`).toBeGreaterThan(0);
    await expect
      .poll(() => wanted.filter((a) => !sub.strings().has(a.id)).length, {
        timeout: 30_000,
        interval: 200,
        message: `#load messages the subscriber on host ${name} has not seen`,
      })
      .toBe(0);
  }
}

describe.each(backendsUnderTest())('two sluice serve hosts on one %s database', (backend) => {
  let world: World | undefined;
  let load: Load | undefined;
  const testLoop = monitorEventLoopDelay({ resolution: 20 });
  beforeEach(() => {
    testLoop.reset();
    testLoop.enable();
  });
  afterEach(async (context) => {
    testLoop.disable();
    // Before the cleanup stops the hosts and removes their homes (and error log).
    if (world && context.task.result?.state === 'fail')
      process.stderr.write(`${diagnose(world, load, testLoop)}\n`);
    if (world) await closeWorld(world);
    world = undefined;
    load = undefined;
  });

  it('keeps every acknowledged send exactly once, positions gapless, receipts single, live feeds crossing hosts and the CLI, attachments served by either host', async () => {
    world = await openWorld(backend);
    const w = world;
    const subs = await openSubscribers(w, w.sides);
    const current = new Load();
    load = current;
    const { acks, receipts } = current;
    const deadline = Date.now() + LOAD_MS;
    // Each writer sends for the load's time and at least twice, however slow the machine is.
    await runLoad(w, current, {
      readerAgents: AGENTS,
      writerDone: () => (acked) => acked >= 2 && Date.now() >= deadline,
    });
    report(`${backend} two hosts`, current);
    for (const side of w.sides) expect(side.serve.exitStatus(), `host ${side.name}`).toBeUndefined();
    expect(current.errors).toEqual([]);
    // Load really ran through both hosts (rates depend on the machine; bench/postgres.ts measures them).
    for (const side of w.sides)
      expect(current.acksThrough(side.name)).toBeGreaterThanOrEqual(2 * WRITERS_PER_HOST);
    expect(receipts.length).toBeGreaterThan(0);
    await expectConsistent(w, acks, receipts);
    await expectSubscribersSawAll(subs, acks);

    // An attachment uploaded through one host downloads through the other. These calls follow
    // the waits above, so their keep-alive sockets may be stale (each is safe to repeat once).
    const [hostA, hostB] = w.sides as [Side, Side];
    const retried = (err: unknown) => current.reconnected(hostA, err);
    const bytes = new Uint8Array(200_000).map((_, i) => (i * 31 + 7) % 256);
    const upload = await retryStaleSocket(
      hostA.serve,
      () =>
        fetch(`${hostA.serve.url}/media`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${w.writerTokens[0]}`,
            'x-filename': encodeURIComponent('spec 中文.bin'),
          },
          body: bytes,
        }),
      retried,
    );
    expect(upload.status).toBe(201);
    const ref = (await upload.json()) as { attachment_id: string };
    await sendKeyed(
      hostA,
      w.writerTokens[0] as string,
      {
        to: '#load',
        body: 'see attached',
        idempotency_key: 'see attached',
        attachments: [ref.attachment_id],
      },
      current,
    );
    const download = await retryStaleSocket(
      hostB.serve,
      () =>
        fetch(`${hostB.serve.url}/media/${ref.attachment_id}`, {
          headers: { authorization: `Bearer ${w.writerTokens[5]}` },
        }),
      (err) => current.reconnected(hostB, err),
    );
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);

    // A CLI process on the same database is one more writer every host hears about.
    const cli = await runCli(['message', 'send', '#load', '-m', 'from the command line'], {
      home: join(w.home, 'cli'),
      env: { SLUICE_DB: w.db ?? '', SLUICE_AS: 'w0' },
    });
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const cliId = /[0-9A-Z]{26}/.exec(cli.stdout)?.[0] as string;
    expect(cliId).toBeDefined();
    for (const sub of subs.values())
      await expect.poll(() => sub.strings().has(cliId), { timeout: 10_000 }).toBe(true);
  }, 120_000);

  it('loses no acknowledged message when one host is killed mid-load, and leaves nothing that blocks the survivor', async () => {
    world = await openWorld(backend);
    const w = world;
    const [survivor, victim] = w.sides as [Side, Side];
    const a0 = w.agents.get('a0') as Principal;
    const subs = await openSubscribers(w, [survivor]);
    const current = new Load();
    load = current;
    const { acks, receipts } = current;
    const deadline = Date.now() + LOAD_MS;
    // Readers leave a0 alone: its inbox only grows, so the victim's read and the survivor's turn
    // below always find messages.
    const readerAgents = AGENTS.filter((name) => name !== 'a0');
    let killed = false;
    let killedAfter = 0;
    const kill = (async () => {
      // Killed once it has acknowledged enough sends (a0 is in #load, half of every writer's sends).
      await current.when(
        () => current.acksThrough(victim.name) >= KILL_AFTER_ACKS || current.errors.length > 0,
      );
      if (current.errors.length > 0) return undefined;
      // The victim's side holds an open turn with recorded coverage when its host dies.
      const turn = await w.local(async () => {
        const opened = await beginTurn(victim.ctx, a0, { owner: `serve:${victim.serve.proc.pid}` });
        const read = (
          await receivedInProcess(victim.ctx, await channelRead(victim.ctx, a0, { unread: true, limit: 5 }))
        ).value as PageResult;
        expect(read.messages.length).toBeGreaterThan(0);
        return opened;
      });
      victim.dead = true;
      await victim.serve.kill();
      killedAfter = current.acksThrough(victim.name);
      killed = true;
      // Its agent-side process goes too (closing twice later is a no-op).
      await w.local(() => victim.ctx.store.close());
      return turn;
    })();
    // The victim's writers send until it dies; the survivor's go on past the kill until each has
    // made SENDS_AFTER_KILL more sends (and the load lasted its time).
    const afterKill: number[] = [];
    const writerDone = (side: Side) => {
      if (side === victim) return () => false;
      const slot = afterKill.push(0) - 1;
      let before: number | undefined;
      return (acked: number) => {
        if (!killed) return false;
        before ??= acked;
        afterKill[slot] = acked - before;
        return acked - before >= SENDS_AFTER_KILL && Date.now() >= deadline;
      };
    };
    await runLoad(w, current, { readerAgents, writerDone }, [kill]);
    const staleTurn = await kill;
    report(`${backend} host B killed after ${killedAfter} of its sends`, current);
    // A survivor that died would explain every later `fetch failed`: say so first, and how
    // (exit code or signal, stderr, error log, event-loop lag; the afterEach prints the rest).
    expect(survivor.serve.exitStatus(), `the surviving host\n${survivor.serve.diagnosis()}`).toBeUndefined();
    // A victim that died before the kill would explain its side's errors the same way.
    expect(victim.serve.proc.signalCode, `the victim\n${victim.serve.diagnosis()}`).toBe('SIGKILL');
    expect(current.errors).toEqual([]);
    expect(staleTurn).toBeDefined();
    expect(current.acksThrough(victim.name)).toBeGreaterThanOrEqual(KILL_AFTER_ACKS);
    expect(afterKill).toEqual(afterKill.map((n) => Math.max(n, SENDS_AFTER_KILL)));
    await expectConsistent(w, acks, receipts);
    await expectSubscribersSawAll(subs, acks);

    if (backend === 'postgres') {
      // The server rolled back whatever the dead host had open: no session is stuck mid-transaction.
      const stuck = () =>
        withAdmin(
          async (c) =>
            (
              await c.query<{ n: number }>(
                `select count(*)::int as n from pg_stat_activity where application_name = $1 and state like 'idle in transaction%'`,
                [w.schema],
              )
            ).rows[0]?.n,
        );
      await expect
        .poll(stuck, { timeout: 5000, message: 'sessions of the dead host idle in transaction' })
        .toBe(0);
    }
    // The dead host's open turn and coverage block nothing: the survivor's agent takes a new
    // turn (abandoning the stale one), reads, settles, and consumes what it read.
    expect(await isDeliverable(survivor.ctx.store.db, a0)).toBe(true);
    const turn = await beginTurn(survivor.ctx, a0);
    const page = (
      await receivedInProcess(survivor.ctx, await channelRead(survivor.ctx, a0, { unread: true, limit: 5 }))
    ).value as PageResult;
    const settled = await endTurn(survivor.ctx, a0, turn.id, { ok: true });
    expect(settled.handled.sort()).toEqual(page.messages.map((m) => m.message_id).sort());
    expect(settled.handled.length).toBeGreaterThan(0);
    const stale = await survivor.ctx.store.db
      .selectFrom('turns')
      .selectAll()
      .where('id', '=', staleTurn?.id as string)
      .executeTakeFirst();
    expect(stale?.state).toBe('abandoned');
    expect(await survivor.ctx.store.db.selectFrom('coverage').selectAll().execute()).toEqual([]);
    // And the survivor still takes writes.
    const after = await sendKeyed(
      survivor,
      w.writerTokens[0] as string,
      { to: '#load', body: 'after the crash', idempotency_key: 'after the crash' },
      current,
    );
    expect(after).toMatch(/^[0-9A-Z]{26}$/);
  }, 120_000);
});
