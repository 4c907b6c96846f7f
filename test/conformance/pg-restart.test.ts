import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { addPrincipal, issueToken, type Principal } from '../../src/host/identity/principals.js';
import { tempHome } from '../support/host.js';
import { clusterUnavailableReason, type PgCluster, startPgCluster } from '../support/pg-cluster.js';
import { RpcError, rpc, type ServeProcess, type Subscriber, startServe, subscribe } from './hosts.js';

/**
 * PostgreSQL restarting under two `sluice serve` hosts (issue: every host used to exit 70 within
 * 0.2 s, a checked-out pool client's 'error' having no listener). A cluster of the test's own is
 * restarted with `pg_ctl restart -m immediate` (backends killed, crash recovery) while writers
 * send through both hosts with idempotency keys and a subscriber on each host watches. Several
 * restarts (SLUICE_PG_RESTARTS, default 3); each host must stay up, every acknowledged send must
 * be stored exactly once, every subscriber must see every acknowledged message, and the first
 * acknowledged send after each restart is reported.
 */
const RESTARTS = Number(process.env.SLUICE_PG_RESTARTS ?? 3);
/** Acknowledged sends between restarts (and before the first, and after the last). */
const ACKS_BETWEEN = Number(process.env.SLUICE_PG_RESTART_ACKS ?? 24);
const WRITERS_PER_HOST = 2;
const AGENTS = ['a0', 'a1'];
/** A writer gives up on one send after this long: far longer than any restart here. */
const SEND_GIVE_UP_MS = 60_000;

interface Ack {
  id: string;
  key: string;
  target: string;
  host: string;
  at: number;
}

interface Host {
  name: string;
  serve: ServeProcess;
}

const skipReason = clusterUnavailableReason();
const title = skipReason
  ? `PostgreSQL restarts under two hosts (skipped: ${skipReason})`
  : 'PostgreSQL restarts under two hosts';

describe.skipIf(skipReason !== undefined)(title, () => {
  let cluster: PgCluster | undefined;
  const cleanups: (() => Promise<void> | void)[] = [];
  beforeAll(async () => {
    cluster = await startPgCluster();
  }, 120_000);
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
    await cluster?.destroy();
  }, 60_000);

  it('no host exits, no acknowledged send is lost or stored twice, subscribers see every one', async () => {
    const pgc = cluster as PgCluster;
    const shared = tempHome('sluice-pgrestart-');
    cleanups.push(shared.cleanup);
    const db = `${pgc.url}?schema=sluice&pool=4`;
    const admin = await openHost({ home: `${shared.home}`, db, durability: 'normal', pollMs: 10 });
    let adminOpen = true;
    cleanups.push(() => (adminOpen ? admin.store.close() : undefined));
    await initHome(admin);
    const agents = new Map<string, Principal>();
    for (const name of AGENTS) agents.set(name, await addPrincipal(admin, { name, kind: 'agent' }));
    const writerTokens: string[] = [];
    for (let i = 0; i < WRITERS_PER_HOST * 2; i++) {
      await addPrincipal(admin, { name: `w${i}`, kind: 'person' });
      writerTokens.push(await issueToken(admin, `w${i}`));
    }
    const ownerRow = await admin.store.db
      .selectFrom('principals')
      .selectAll()
      .where('name', '=', 'owner')
      .executeTakeFirstOrThrow();
    const channel = await createChannel(admin, ownerRow as unknown as Principal, {
      name: 'load',
      members: [...AGENTS, ...writerTokens.map((_, i) => `w${i}`)],
    });
    const ownerToken = await issueToken(admin, 'owner');
    await admin.store.close();
    adminOpen = false;

    const hosts: Host[] = [];
    for (const name of ['A', 'B']) {
      const serve = await startServe({ home: `${shared.home}/host-${name}`, db });
      cleanups.push(() => serve.stop());
      hosts.push({ name, serve });
    }
    const subs: Subscriber[] = [];
    for (const host of hosts) {
      const sub = await subscribe(host.serve.url, ownerToken, { channels: [channel.id], queues: AGENTS });
      cleanups.push(() => sub.close());
      subs.push(sub);
    }

    const acks: Ack[] = [];
    const errors: string[] = [];
    const answers = new Map<string, number>();
    const waiters: (() => void)[] = [];
    const changed = () => {
      for (const w of waiters.splice(0)) w();
    };
    const until = async (ready: () => boolean, what: string, ms = 90_000) => {
      const deadline = Date.now() + ms;
      while (!ready()) {
        const dead = hosts.find((h) => h.serve.exitStatus() !== undefined);
        if (dead) throw new Error(`host ${dead.name} ended: ${dead.serve.exitStatus()}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 1000);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    };
    let stop = false;

    // One keyed send, repeated with the same key until acknowledged: `unavailable` is the
    // host's "retry", as the client contract says; anything else is recorded as an error.
    const inFlight = new Set<number>();
    let nextSend = 0;
    const sendUntilAcked = async (host: Host, token: string, key: string, target: string) => {
      const began = Date.now();
      const self = nextSend++;
      inFlight.add(self);
      try {
        return await sendRetrying(host, token, key, target, began);
      } finally {
        inFlight.delete(self);
      }
    };
    const sendRetrying = async (host: Host, token: string, key: string, target: string, began: number) => {
      for (;;) {
        try {
          const reply = await rpc<{ message_id: string }>(host.serve.url, token, 'message.send', {
            to: target,
            body: `body of ${key}`,
            idempotency_key: key,
          });
          return reply.message_id;
        } catch (err) {
          const code = err instanceof RpcError ? err.code : 'thrown';
          answers.set(code, (answers.get(code) ?? 0) + 1);
          if (host.serve.exitStatus() !== undefined) throw err;
          if (code !== 'unavailable' && code !== 'connection') errors.push(`${key}: ${String(err)}`);
          if (Date.now() - began > SEND_GIVE_UP_MS) throw err;
          changed();
          await new Promise((r) => setTimeout(r, 10 + Math.random() * 40));
        }
      }
    };
    const writer = async (host: Host, token: string, index: number) => {
      for (let i = 0; !stop; i++) {
        const key = `${host.name}/${index}/${i}`;
        const target = i % 2 === 0 ? '#load' : (AGENTS[(index + i) % AGENTS.length] as string);
        const id = await sendUntilAcked(host, token, key, target);
        acks.push({ id, key, target, host: host.name, at: Date.now() });
        changed();
      }
    };
    const writers = hosts.flatMap((host, h) =>
      Array.from({ length: WRITERS_PER_HOST }, (_, i) =>
        writer(host, writerTokens[h * WRITERS_PER_HOST + i] as string, i),
      ),
    );
    const writing = Promise.all(writers).finally(() => changed());
    const failedEarly = writing.then(
      () => undefined,
      (err: unknown) => err,
    );

    const underWay: number[] = [];
    const restarts: { restartMs: number; firstAckAfterReadyMs: number; firstAckAfterBeganMs: number }[] = [];
    try {
      for (let r = 0; r < RESTARTS; r++) {
        const before = acks.length;
        await until(() => acks.length >= before + ACKS_BETWEEN, `acknowledged sends before restart ${r + 1}`);
        const began = Date.now();
        // Sends under way as the server goes down: their outcome is what the restart puts at risk.
        underWay.push(inFlight.size);
        await pgc.restartImmediate();
        const ready = Date.now();
        await until(
          () => hosts.every((h) => acks.some((a) => a.host === h.name && a.at > ready)),
          `a send acknowledged by each host after restart ${r + 1}`,
        );
        const first = Math.min(...acks.filter((a) => a.at > ready).map((a) => a.at));
        restarts.push({
          restartMs: ready - began,
          firstAckAfterReadyMs: first - ready,
          firstAckAfterBeganMs: first - began,
        });
      }
      const after = acks.length;
      await until(() => acks.length >= after + ACKS_BETWEEN, 'acknowledged sends after the last restart');
    } catch (err) {
      const why = await failedEarly;
      throw new Error(
        `${String(err)}${why ? `; a writer failed: ${String(why)}` : ''}\n${hosts.map((h) => `--- host ${h.name}: ${h.serve.diagnosis()}`).join('\n')}\n--- server log:\n${pgc.logTail()}`,
      );
    } finally {
      stop = true;
    }
    await writing;
    process.stdout.write(
      `[pg-restart] ${RESTARTS} restarts (-m immediate), ${acks.length} acknowledged sends, sends in flight at each restart: ${underWay.join(', ')}, answers while down: ${JSON.stringify(Object.fromEntries(answers))}; per restart: ${restarts
        .map(
          (x) =>
            `server back after ${x.restartMs} ms, first ack ${x.firstAckAfterReadyMs} ms after it (${x.firstAckAfterBeganMs} ms after the restart began)`,
        )
        .join('; ')}\n`,
    );

    for (const host of hosts) expect(host.serve.exitStatus(), `host ${host.name}`).toBeUndefined();
    expect(errors).toEqual([]);
    // The restarts hit sends in flight, not an idle pair of hosts.
    expect(underWay.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);

    // Exactly once: one message per key, the acknowledged id, in the right inboxes.
    const check = await openHost({ home: shared.home, db, durability: 'normal', pollMs: 10 });
    try {
      const rows = await check.store.db.selectFrom('messages').select(['id', 'body']).execute();
      const byBody = new Map<string, string[]>();
      for (const row of rows) byBody.set(row.body, [...(byBody.get(row.body) ?? []), row.id]);
      const wrong = acks.filter(
        (a) => JSON.stringify(byBody.get(`body of ${a.key}`)) !== JSON.stringify([a.id]),
      );
      expect(wrong.map((a) => `${a.key}: acked ${a.id}, stored ${byBody.get(`body of ${a.key}`)}`)).toEqual(
        [],
      );
      expect(rows.filter((row) => row.body.startsWith('body of ')).length).toBe(acks.length);
      const inbox = await check.store.db.selectFrom('inbox').select(['agent_id', 'message_id']).execute();
      const nameOf = new Map([...agents].map(([name, p]) => [p.id, name]));
      const holders = new Map<string, string[]>();
      for (const row of inbox)
        holders.set(row.message_id, [
          ...(holders.get(row.message_id) ?? []),
          nameOf.get(row.agent_id) ?? '?',
        ]);
      const misplaced = acks.filter((a) => {
        const expected = a.target === '#load' ? AGENTS : [a.target];
        return JSON.stringify((holders.get(a.id) ?? []).sort()) !== JSON.stringify(expected);
      });
      expect(misplaced.map((a) => a.key)).toEqual([]);
    } finally {
      await check.store.close();
    }

    // Live feeds: every acknowledged channel message reaches every subscriber (by notification,
    // or by the history a resync makes it read). Queue notifications carry summaries, not ids.
    const channelAcks = acks.filter((a) => a.target === '#load');
    for (const [i, sub] of subs.entries()) {
      await expect
        .poll(() => channelAcks.filter((a) => !sub.strings().has(a.id)).map((a) => a.key), {
          timeout: 30_000,
          interval: 200,
          message: `messages the subscriber on host ${hosts[i]?.name} has not seen`,
        })
        .toEqual([]);
    }
  }, 300_000);
});
