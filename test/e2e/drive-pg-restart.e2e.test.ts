// `sluice drive claude` (the REAL Claude Code client, scripted model server) and a `sluice serve`
// host on a PostgreSQL cluster of the test's own, which the test stops and restarts mid-traffic.
// Field bug: the driver exited when PostgreSQL restarted under traffic (an `unavailable` thrown
// from the loop's dispatch or settle ended it). Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-pg-restart.e2e.test.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { addPrincipal, issueToken, type Principal } from '../../src/host/identity/principals.js';
import { RpcError, rpc, type ServeProcess, startServe } from '../conformance/hosts.js';
import { type DriverProcess, envelopeIds, envelopesIn, startDriver } from '../drivers/drive-harness.js';
import { clusterUnavailableReason, type PgCluster, startPgCluster } from '../support/pg-cluster.js';
import { ensureClients } from './support/clients.js';
import {
  isMainAgentRequest,
  type ModelServer,
  type RecordedRequest,
  type Reply,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';

const enabled = process.env.SLUICE_E2E === '1';
const skipReason = clusterUnavailableReason();
const title = skipReason
  ? `sluice drive claude through PostgreSQL restarts (skipped: ${skipReason})`
  : 'sluice drive claude through PostgreSQL restarts';

/** Messages sent in the last phase, while the cluster restarts under them. */
const BURST = 6;

/** A point in the model script the test holds the model at (a turn in flight), then lets go. */
interface HoldPoint {
  reached: Promise<void>;
  release(): void;
}

/**
 * A model that answers every message the driver delivers with one `message_reply` (keyed by the
 * message, so a retried reply is stored once), calls again for any reply whose tool call failed
 * (the database was down), and ends the turn once each has been answered.
 */
class ReplyingModel {
  /** Message ids whose reply the tool reported stored. */
  readonly replied = new Set<string>();
  /** Tool call id → the message it answers. */
  readonly #calls = new Map<string, string>();
  #nextCall = 0;
  /** Hold the next request that would end a turn (after its replies) until released. */
  #holdEnd: { reached: () => void; released: Promise<void> } | undefined;
  /** Called at the first model request that carries a message not among these. */
  #watch: { known: Set<string>; seen: () => void } | undefined;

  holdNextTurnEnd(): HoldPoint {
    let reached!: () => void;
    let release!: () => void;
    const reachedP = new Promise<void>((r) => {
      reached = r;
    });
    const released = new Promise<void>((r) => {
      release = r;
    });
    this.#holdEnd = { reached, released };
    return { reached: reachedP, release };
  }

  /** Resolves at the first model request that delivers a message not in `known`. */
  firstDeliveryBeyond(known: Iterable<string>): Promise<void> {
    return new Promise((resolve) => {
      this.#watch = { known: new Set(known), seen: resolve };
    });
  }

  readonly script = async (req: RecordedRequest): Promise<Reply> => {
    if (!isMainAgentRequest(req)) return { text: 'ok' };
    for (const result of toolResults(req)) {
      const id = this.#calls.get(result.callId);
      if (id !== undefined && !result.isError && result.text.includes('"message_id"')) this.replied.add(id);
    }
    const delivered = envelopesIn(req).flatMap(envelopeIds);
    const watch = this.#watch;
    if (watch && delivered.some((id) => !watch.known.has(id))) {
      this.#watch = undefined;
      watch.seen();
    }
    const todo = [...new Set(delivered)].filter((id) => !this.replied.has(id));
    if (todo.length > 0) return { toolCalls: todo.map((id) => this.#replyCall(id)) };
    const hold = this.#holdEnd;
    if (hold) {
      this.#holdEnd = undefined;
      hold.reached();
      await hold.released;
    }
    return { text: 'done' };
  };

  #replyCall(messageId: string) {
    const id = `toolu_reply_${this.#nextCall++}`;
    this.#calls.set(id, messageId);
    return {
      id,
      name: 'mcp__sluice__message_reply',
      input: { message_id: messageId, body: `answer to ${messageId}`, idempotency_key: `reply-${messageId}` },
    };
  }
}

describe.skipIf(!enabled || skipReason !== undefined)(title, () => {
  let server: ModelServer;
  let claudeBin: string;
  let cluster: PgCluster;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    claudeBin = (await ensureClients()).claude;
    server = await startModelServer();
    cluster = await startPgCluster();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
    await cluster?.destroy();
  }, 60_000);
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
  }, 60_000);

  test('the driver stays up through a stop and a restart, says so in one line, and every message is delivered once, handled once and answered', async () => {
    const model = new ReplyingModel();
    server.reset(model.script);
    const home = mkdtempSync(join(tmpdir(), 'sluice-drive-pg-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const db = `${cluster.url}?schema=sluice&pool=4`;
    const admin: HostContext = await openHost({ home, db, durability: 'normal', pollMs: 20 });
    cleanups.push(() => admin.store.close());
    await initHome(admin);
    const bot: Principal = await addPrincipal(admin, { name: 'bot', kind: 'agent', settlement: 'turn' });
    const ownerToken = await issueToken(admin, 'owner');

    const serve: ServeProcess = await startServe({ home: join(home, 'host'), db });
    cleanups.push(() => serve.stop());
    const claudeHome = makeClaudeHome();
    cleanups.push(() => rmSync(claudeHome.root, { recursive: true, force: true }));
    const env = claudeEnv(server, claudeHome, {
      env: { SLUICE_HOME: home, SLUICE_DB: db, SLUICE_CLAUDE_BIN: claudeBin },
    });
    const driver: DriverProcess = startDriver(
      'claude',
      ['--as', 'bot', '--cwd', claudeHome.cwd, '--', '--no-session-persistence'],
      env,
      400_000,
    );
    cleanups.push(() => driver.stop());
    await driver.waitForOutput(/ready/, 120_000);

    const alive = () => driver.child.exitCode === null && driver.child.signalCode === null;
    const diagnosis = () =>
      `driver ${alive() ? 'alive' : `exited ${driver.child.exitCode ?? driver.child.signalCode}`}\n--- driver stdout:\n${driver.stdout()}\n--- driver stderr:\n${driver.stderr()}\n--- host: ${serve.diagnosis()}\n--- server log:\n${cluster.logTail()}\n--- model: ${server.mainCalls().length} main calls, last tool result: ${toolResults(
        server.mainCalls().at(-1) ?? ({ body: {} } as RecordedRequest),
      )
        .at(-1)
        ?.text.slice(0, 300)}`;
    /** Waits for an observable state; a driver that exits meanwhile fails the test at once. */
    const until = async (ready: () => Promise<boolean> | boolean, what: string, ms = 120_000) => {
      const deadline = Date.now() + ms;
      for (;;) {
        if (!alive()) throw new Error(`the driver exited while waiting for ${what}\n${diagnosis()}`);
        if (await Promise.resolve(ready()).catch(() => false)) return;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${diagnosis()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    // A person's send through the host: `unavailable` (or a refused connection) is the host's
    // "retry", with the same key, as the client contract says.
    const sent = new Map<string, string>();
    const send = async (key: string): Promise<string> => {
      for (;;) {
        try {
          const { message_id } = await rpc<{ message_id: string }>(serve.url, ownerToken, 'message.send', {
            to: 'bot',
            body: `please answer ${key}`,
            idempotency_key: key,
          });
          sent.set(key, message_id);
          return message_id;
        } catch (err) {
          const retryable =
            err instanceof RpcError && (err.code === 'unavailable' || err.code === 'connection');
          if (!retryable || serve.exitStatus() !== undefined) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    const handledAndAnswered = async (ids: readonly string[]) => {
      const states = await admin.store.db
        .selectFrom('inbox')
        .select(['message_id', 'state'])
        .where('agent_id', '=', bot.id)
        .execute();
      const handled = new Set(states.filter((s) => s.state === 'handled').map((s) => s.message_id));
      return ids.every((id) => handled.has(id) && model.replied.has(id));
    };

    // Before any outage: one message, answered and handled.
    const first = await send('k1');
    await until(() => handledAndAnswered([first]), 'the first message handled');

    // 1. The server stops while a turn is in flight, just before the model ends it: the driver
    //    settles the turn while the database is gone, must wait it out (one line), and settle it
    //    once the server is back. A person sends meanwhile (retrying until the host acknowledges).
    const hold = model.holdNextTurnEnd();
    const second = await send('k2');
    await hold.reached;
    await cluster.stopImmediate();
    hold.release();
    const duringOutage = send('k3');
    await until(() => /database unavailable, retrying/.test(driver.stdout()), 'the driver to say it retries');
    const unavailableLines = driver
      .stdout()
      .split('\n')
      .filter((l) => /database unavailable/.test(l));
    await cluster.start();
    const third = await duringOutage;
    await until(() => handledAndAnswered([second, third]), 'the messages of the outage handled');
    expect(driver.stderr()).toBe('');
    // One line per outage, and one when it ends; no stack.
    expect(unavailableLines).toHaveLength(1);
    expect(unavailableLines[0]).toMatch(/^\d\d:\d\d:\d\d bot database unavailable, retrying: .*PostgreSQL/);
    expect(driver.stdout()).toMatch(/\n\d\d:\d\d:\d\d bot database back after \d+\.\ds\n/);
    expect(driver.stdout()).not.toMatch(/\n\s+at /);

    // 2. A restart (backends killed) while messages arrive and turns run.
    const burstKeys = Array.from({ length: BURST }, (_, i) => `b${i}`);
    const burstSeen = model.firstDeliveryBeyond(sent.values());
    const burst = Promise.all(burstKeys.map((k) => send(k)));
    await burstSeen;
    await cluster.restartImmediate();
    const burstIds = await burst;
    await until(() => handledAndAnswered(burstIds), 'the burst handled');

    expect(alive(), diagnosis()).toBe(true);
    // Every message sent is stored once, handled once, answered once and was delivered to the
    // model in exactly one envelope.
    const all = [...sent.values()];
    expect(all).toHaveLength(3 + BURST);
    const inbox = await admin.store.db
      .selectFrom('inbox')
      .select(['message_id', 'state'])
      .where('agent_id', '=', bot.id)
      .execute();
    expect(inbox.map((r) => r.message_id).sort()).toEqual([...all].sort());
    expect(inbox.every((r) => r.state === 'handled')).toBe(true);
    const replies = await admin.store.db
      .selectFrom('messages')
      .select(['reply_to'])
      .where('author_id', '=', bot.id)
      .execute();
    expect(replies.map((r) => r.reply_to).sort()).toEqual([...all].sort());
    const envelopes = new Set(server.mainCalls().flatMap((req) => envelopesIn(req)));
    const deliveries = new Map<string, number>();
    for (const text of envelopes)
      for (const id of envelopeIds(text)) deliveries.set(id, (deliveries.get(id) ?? 0) + 1);
    expect(Object.fromEntries(deliveries)).toEqual(Object.fromEntries(all.map((id) => [id, 1])));
  }, 480_000);
});
