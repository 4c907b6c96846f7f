// The shared driver loop against an in-memory client (the real clients are exercised in
// test/e2e/drive-*.e2e.test.ts): dispatch rules, settlement and the queue controls.
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import { pauseQueue, resumeQueue } from '../../src/host/queue/queue.js';
import {
  beginTurn,
  requireTurnSettlement,
  type TurnOutcome,
  type TurnReport,
} from '../../src/host/turns/index.js';
import {
  ClientGoneError,
  type DriverClient,
  runDriverLoop,
  type TurnRequest,
} from '../../src/surfaces/drivers/loop.js';
import { turnStatusLine } from '../../src/surfaces/drivers/status-lines.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { eventually } from './drive-harness.js';
import { LoopChecks } from './loop-checks.js';

/** A client whose turns end when the test says so. */
class ScriptedClient implements DriverClient {
  readonly name = 'fake';
  readonly sessionKey = 'fake:1';
  readonly requests: TurnRequest[] = [];
  private finishers: ((o: TurnOutcome | Error) => void)[] = [];
  private die: (why: string) => void = () => {};
  readonly gone = new Promise<string>((resolve) => {
    this.die = resolve;
  });
  /** When set, every turn ends at once with this outcome. */
  auto: TurnOutcome | undefined;

  runTurn(request: TurnRequest): Promise<TurnOutcome> {
    this.requests.push(request);
    if (this.auto) return Promise.resolve(this.auto);
    return new Promise((resolve, reject) => {
      this.finishers.push((o) => (o instanceof Error ? reject(o) : resolve(o)));
      void this.gone.then((why) => reject(new ClientGoneError(why)));
    });
  }
  finish(outcome: TurnOutcome): void {
    this.finishers.shift()?.(outcome);
  }
  kill(): void {
    this.die('fake client died');
  }
  async stop(): Promise<void> {}
  endTurn: (() => Promise<void>) | undefined;
  ids(i: number): string[] {
    return this.requests[i]?.delivered.map((m) => m.id) ?? [];
  }
}

describe('the driver loop', () => {
  let h: TestHost;
  let bot: Principal;
  let client: ScriptedClient;
  let stop: AbortController;
  let loop: Promise<void>;
  let checks: LoopChecks;
  const reports: TurnReport[] = [];

  beforeEach(async () => {
    h = await openTestHost();
    bot = await h.agent('bot', 'turn');
    client = new ScriptedClient();
    checks = new LoopChecks();
    stop = new AbortController();
    reports.length = 0;
  });
  afterEach(async () => {
    stop.abort();
    client.kill();
    await loop?.catch(() => {});
    await h.close();
  });

  const send = async (body: string) => (await sendMessage(h.ctx, h.owner, { to: 'bot', body })).message_id;
  const states = async () =>
    (
      await h.ctx.store.db
        .selectFrom('inbox')
        .select('state')
        .where('agent_id', '=', bot.id)
        .orderBy('position')
        .execute()
    ).map((r) => r.state);
  const start = (limits?: { maxMessages?: number; maxBytes?: number }) => {
    loop = runDriverLoop(h.ctx, bot, client, {
      limits,
      signal: stop.signal,
      onTurn: (r) => reports.push(r),
      onCheck: (c) => checks.record(c, reports.length),
    });
  };
  const turnsStarted = (n: number) =>
    eventually(async () => (client.requests.length >= n ? true : undefined), 5000, `${n} turn(s)`);

  test('refuses an agent that settles explicitly, naming the fix in one line', async () => {
    const explicit = await h.agent('manual');
    await expect(runDriverLoop(h.ctx, explicit, client)).rejects.toThrow(
      'manual settles explicitly; drivers settle by turns: run sluice agent settle manual turn (or add agents with --settlement turn)',
    );
    expect(() => requireTurnSettlement(bot)).not.toThrow();
  });

  test('a successful turn marks exactly the delivered ids handled', async () => {
    const ids = [await send('one'), await send('two'), await send('three')];
    start({ maxMessages: 2 });
    await turnsStarted(1);
    expect(client.ids(0)).toEqual(ids.slice(0, 2));
    client.finish({ ok: true });
    await turnsStarted(2);
    expect(await states()).toEqual(['handled', 'handled', 'waiting']);
    expect(reports[0]).toMatchObject({
      outcome: 'ok',
      delivered: ids.slice(0, 2),
      handled: ids.slice(0, 2),
      returned: [],
    });
    expect(client.ids(1)).toEqual(ids.slice(2));
  });

  test('a failed turn returns its ids and blocks dispatch until each is resumed, then re-delivers them first', async () => {
    const ids = [await send('a'), await send('b')];
    start();
    await turnsStarted(1);
    client.finish({ ok: false, kind: 'model_error', reason: 'scripted' });
    await eventually(async () => ((await states()).every((s) => s === 'returned') ? true : undefined));
    const { value: later, mark } = await checks.markAfter(h.ctx, () => send('c'));
    expect(await checks.decisionFrom(mark, 'dispatch')).toBe('wait');
    expect(client.requests).toHaveLength(1);
    const resumed = await checks.markAfter(h.ctx, () => resumeQueue(h.ctx, h.owner, 'bot', ids[0]));
    expect(await checks.decisionFrom(resumed.mark, 'dispatch')).toBe('wait');
    expect(client.requests).toHaveLength(1); // the second card still blocks
    await resumeQueue(h.ctx, h.owner, 'bot', ids[1]);
    await turnsStarted(2);
    expect(client.ids(1)).toEqual([...ids, later]);
    client.finish({ ok: true });
    await eventually(async () => ((await states()).every((s) => s === 'handled') ? true : undefined));
  });

  test('pause stops dispatch after the current turn; unpausing continues', async () => {
    const first = await send('first');
    start();
    await turnsStarted(1);
    await pauseQueue(h.ctx, h.owner, 'bot', 'lunch');
    const second = await send('second');
    client.finish({ ok: true });
    await eventually(async () => ((await states())[0] === 'handled' ? true : undefined));
    // The loop's first look after the turn leaves the paused queue alone.
    expect(await checks.decisionFrom(0, 'dispatch', (c) => c.afterTurns === 1)).toBe('wait');
    expect(client.requests).toHaveLength(1);
    await resumeQueue(h.ctx, h.owner, 'bot');
    await turnsStarted(2);
    expect(client.ids(1)).toEqual([second]);
    expect(first).not.toBe(second);
  });

  test('a client that dies mid-turn abandons the turn: nothing is consumed', async () => {
    await send('x');
    start();
    await turnsStarted(1);
    client.kill();
    await expect(loop).rejects.toBeInstanceOf(ClientGoneError);
    expect(await states()).toEqual(['waiting']);
    const turns = await h.ctx.store.db.selectFrom('turns').select('state').execute();
    expect(turns.map((t) => t.state)).toEqual(['abandoned']);
    expect(reports[0]).toMatchObject({ outcome: 'abandoned', handled: [], returned: [] });
  });

  test('stopping the driver mid-turn abandons the turn', async () => {
    await send('x');
    start();
    await turnsStarted(1);
    stop.abort();
    await loop;
    expect(await states()).toEqual(['waiting']);
    expect(reports[0]).toMatchObject({ outcome: 'abandoned', reason: 'driver stopped' });
  });

  test('stopping the driver mid-turn ends the client before the turn is abandoned', async () => {
    const seenAtEnd: { turns: string[]; reports: number }[] = [];
    client.endTurn = async () => {
      const turns = await h.ctx.store.db.selectFrom('turns').select('state').execute();
      seenAtEnd.push({ turns: turns.map((t) => t.state), reports: reports.length });
    };
    await send('x');
    start();
    await turnsStarted(1);
    stop.abort();
    await loop;
    // Still open when the client was ended: nothing it did afterwards could act for the turn.
    expect(seenAtEnd).toHaveLength(1);
    expect(seenAtEnd[0]?.turns).toHaveLength(1);
    expect(seenAtEnd[0]?.turns).not.toContain('abandoned');
    expect(seenAtEnd[0]?.reports).toBe(0);
    expect(reports[0]).toMatchObject({ outcome: 'abandoned', reason: 'driver stopped' });
  });

  test('a turn left open by a dead driver is abandoned at start', async () => {
    await send('x');
    const stale = await beginTurn(h.ctx, bot, { sessionKey: 'dead' });
    const started: (string | null)[] = [];
    client.auto = { ok: true };
    loop = runDriverLoop(h.ctx, bot, client, {
      signal: stop.signal,
      onStart: (i) => started.push(i.abandoned),
    });
    await eventually(async () => ((await states())[0] === 'handled' ? true : undefined));
    expect(started).toEqual([stale.id]);
  });

  test('an oversized head is offered once, not in a loop, until the queue changes', async () => {
    await send('y'.repeat(20_000));
    start();
    await turnsStarted(1);
    expect(client.requests[0]!.delivery.included).toEqual([]);
    expect(client.requests[0]!.delivery.oversizedHead).not.toBeNull();
    client.finish({ ok: true });
    // The first look after the turn waits for a change instead of offering the head again.
    expect(await checks.decisionFrom(0, 'dispatch', (c) => c.afterTurns === 1)).toBe('wait');
    expect(client.requests).toHaveLength(1);
    expect(await states()).toEqual(['waiting']);
    await send('small');
    await turnsStarted(2);
  });

  test('a model that archives what it was delivered does not stall the rest of the backlog', async () => {
    const ids = [await send('one'), await send('two'), await send('three')];
    start({ maxMessages: 2 });
    await turnsStarted(1);
    await archiveMessages(h.ctx, bot, client.ids(0));
    client.finish({ ok: true });
    await turnsStarted(2);
    expect(reports[0]).toMatchObject({ delivered: ids.slice(0, 2), handled: [] });
    expect(client.ids(1)).toEqual(ids.slice(2));
  });

  test('wakes for a message sent while it idles', async () => {
    client.auto = { ok: true };
    start();
    expect(await checks.decisionFrom(0, 'dispatch')).toBe('wait');
    expect(client.requests).toHaveLength(0);
    const id = await send('hello');
    await turnsStarted(1);
    expect(client.ids(0)).toEqual([id]);
  });
});

describe('turnStatusLine', () => {
  test('says outcome, counts, the first ids and the duration in one line', () => {
    const line = turnStatusLine(
      'bot',
      {
        turnId: 't_1',
        delivered: ['m1', 'm2', 'm3', 'm4'],
        outcome: 'failed',
        failureKind: 'model_error',
        handled: [],
        returned: ['m1', 'm2', 'm3', 'm4'],
        durationMs: 1530,
      },
      new Date('2026-01-02T03:04:05Z'),
    );
    expect(line).toBe(
      '03:04:05 bot t_1 failed (model_error): 4 delivered [m1 m2 m3 …], 0 handled, 4 returned, 1.5s',
    );
  });
});
