// One sender must not be able to stop a driven agent (issue 11 item 3). The driver loop against an
// in-memory client that builds its turn content exactly as the real clients do (claudeTurnContent,
// codexTurnInput), on both backends: poison attachments become "could not be attached" lines and
// the turn goes on; a message whose turns keep ending without settling is returned with its reason
// after a few tries; a driver stopped on purpose is not held against the message.
import sharp from 'sharp';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { putMedia } from '../../src/host/media.js';
import { sendMessage } from '../../src/host/messages.js';
import type { Principal } from '../../src/host/principals.js';
import { resumeQueue, withdrawMessage } from '../../src/host/queue.js';
import {
  DEFAULT_MAX_DISPATCH_ATTEMPTS,
  REPEATED_FAILURE_KIND,
  type TurnOutcome,
  type TurnReport,
} from '../../src/host/turns/index.js';
import { CODEX_TURN_LEAD } from '../../src/surfaces/drivers/codex.js';
import { claudeTurnContent, codexTurnInput } from '../../src/surfaces/drivers/content.js';
import {
  ClientGoneError,
  type DriverClient,
  runDriverLoop,
  type TurnRequest,
} from '../../src/surfaces/drivers/loop.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';
import { pixelBombPng, truncatedPng } from '../support/poison-images.js';
import { eventually, sleep } from './drive-harness.js';

type Behaviour = (ids: string[]) => TurnOutcome | Error | 'die' | 'hang';

interface SeenTurn {
  ids: string[];
  /** Every text the client was given (Claude text blocks, or the Codex text item). */
  texts: string[];
  /** Image blocks (Claude) or localImage items (Codex). */
  images: number;
}

/** A client that renders its input like the real one, then ends the turn as `behaviour` says. */
class RenderingClient implements DriverClient {
  readonly sessionKey: string;
  readonly turns: SeenTurn[] = [];
  private die: (why: string) => void = () => {};
  readonly gone = new Promise<string>((resolve) => {
    this.die = resolve;
  });

  constructor(
    readonly name: 'claude' | 'codex',
    private readonly h: ConformanceHost,
    private readonly agent: Principal,
    private readonly behaviour: Behaviour,
  ) {
    this.sessionKey = `${name}:test`;
  }

  async runTurn(request: TurnRequest): Promise<TurnOutcome> {
    const ids = request.delivered.map((m) => m.id);
    if (this.name === 'claude') {
      const blocks = await claudeTurnContent(
        this.h.ctx,
        this.agent,
        request.delivery.text,
        request.delivered,
      );
      this.turns.push({
        ids,
        texts: blocks.flatMap((b) => (b.type === 'text' ? [b.text] : [])),
        images: blocks.filter((b) => b.type === 'image').length,
      });
    } else {
      const items = await codexTurnInput(this.h.ctx, this.agent, CODEX_TURN_LEAD, request.delivered);
      this.turns.push({
        ids,
        texts: items.flatMap((i) => (i.type === 'text' ? [i.text] : [])),
        images: items.filter((i) => i.type === 'localImage').length,
      });
    }
    const next = this.behaviour(ids);
    if (next === 'die') {
      this.die(`${this.name} exited (code 1)`);
      throw new ClientGoneError(`${this.name} exited (code 1)`);
    }
    if (next === 'hang') return new Promise(() => {});
    if (next instanceof Error) throw next;
    return next;
  }
  async stop(): Promise<void> {}
}

describe.each(backendsUnderTest())('drivers never stop on one message (%s)', (backend) => {
  let h: ConformanceHost;
  let bot: Principal;
  const loops: { stop: AbortController; done: Promise<void> }[] = [];
  let reports: TurnReport[];
  let returned: { id: string; reason: string }[];

  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'poison');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
    bot = await h.agent('bot', 'turn');
    reports = [];
    returned = [];
  });
  afterEach(async () => {
    for (const l of loops.splice(0)) {
      l.stop.abort();
      await l.done.catch(() => {});
    }
    await h.close();
  });

  const send = async (body: string, files: { bytes: Uint8Array; name: string }[] = []) => {
    const attachmentIds = [];
    for (const f of files)
      attachmentIds.push((await putMedia(h.ctx, h.owner, f.bytes, f.name)).attachment_id);
    return (await sendMessage(h.ctx, h.owner, { to: 'bot', body, attachmentIds })).message_id;
  };
  const stateOf = async (id: string) =>
    h.ctx.store.db
      .selectFrom('inbox')
      .select(['state', 'failure_kind', 'returned_reason'])
      .where('agent_id', '=', bot.id)
      .where('message_id', '=', id)
      .executeTakeFirstOrThrow();
  const until = (check: () => Promise<boolean> | boolean, what: string) =>
    eventually(async () => ((await check()) ? true : undefined), 30_000, what);
  const start = (client: RenderingClient) => {
    const stop = new AbortController();
    const done = runDriverLoop(h.ctx, bot, client, {
      signal: stop.signal,
      retryDelayMs: 0,
      onTurn: (r) => reports.push(r),
      onReturned: (r) => returned.push(...r),
    });
    loops.push({ stop, done });
    return { stop, done };
  };

  describe.each(['claude', 'codex'] as const)('%s', (clientName) => {
    test('a truncated PNG and a pixel bomb become "could not be attached" lines, the turn settles, later messages are handled', async () => {
      const good = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#c36' } })
        .png()
        .toBuffer();
      const poisoned = await send('three pictures', [
        { bytes: truncatedPng(), name: 'broken.png' },
        { bytes: pixelBombPng(), name: 'bomb.png' },
        { bytes: good, name: 'good.png' },
      ]);
      const client = new RenderingClient(clientName, h, bot, () => ({ ok: true }));
      const { done } = start(client);
      let finished = false;
      void done.finally(() => {
        finished = true;
      });
      await until(async () => reports.length === 1, 'the first turn settled');

      const first = client.turns[0]!;
      expect(first.ids).toEqual([poisoned]);
      const text = first.texts.join('\n');
      expect(text).toMatch(
        new RegExp(
          `"broken\\.png" \\(image/png, ${truncatedPng().length} bytes\\) from message ${poisoned} could not be attached: the image could not be decoded`,
        ),
      );
      expect(text).toContain(
        `"bomb.png" (image/png, ${pixelBombPng().length} bytes) from message ${poisoned} could not be attached: the image is larger than 100 megapixels and is not decoded`,
      );
      expect(first.images).toBe(1); // the good picture still goes as an image
      expect(reports[0]).toMatchObject({ outcome: 'ok', handled: [poisoned] });

      const later = await send('and then this');
      await until(async () => (await stateOf(later)).state === 'handled', 'the later message handled');
      expect(client.turns.map((t) => t.ids)).toEqual([[poisoned], [later]]);
      expect(finished).toBe(false);
    });
  });

  test(`a message whose turns keep failing in the client is returned with its reason after ${DEFAULT_MAX_DISPATCH_ATTEMPTS} tries; the driver keeps running`, async () => {
    const poison = await send('this one breaks the client');
    const innocent = await send('this one is fine');
    const client = new RenderingClient('codex', h, bot, (ids) =>
      ids.includes(poison)
        ? new Error('codex: {"code":-32603,"message":"failed to decode image"}')
        : { ok: true },
    );
    const { done } = start(client);
    await until(() => returned.length === 1, 'the poisoned message returned');

    // Tried as delivered twice (a single failure may be anyone's), then alone (so a failure is
    // its own), then returned.
    expect(client.turns.map((t) => t.ids)).toEqual([[poison, innocent], [poison, innocent], [poison]]);
    expect(await stateOf(poison)).toEqual({
      state: 'returned',
      failure_kind: REPEATED_FAILURE_KIND,
      returned_reason:
        '3 turns carrying it ended without settling; last: codex: {"code":-32603,"message":"failed to decode image"}',
    });
    expect(returned.map((r) => r.id)).toEqual([poison]);
    expect(reports.map((r) => r.outcome)).toEqual(['abandoned', 'abandoned', 'abandoned']);

    // Blocking rules as for any returned card: nothing else is dispatched until a person acts.
    await sleep(300);
    expect(client.turns).toHaveLength(3);
    expect((await stateOf(innocent)).state).toBe('waiting');
    await withdrawMessage(h.ctx, h.owner, 'bot', poison);
    await until(async () => (await stateOf(innocent)).state === 'handled', 'the innocent message handled');
    const later = await send('later');
    await until(async () => (await stateOf(later)).state === 'handled', 'a later message handled');
    expect(client.turns.slice(3).map((t) => t.ids)).toEqual([[innocent], [later]]);
    let finished = false;
    void done.finally(() => {
      finished = true;
    });
    await sleep(0);
    expect(finished).toBe(false);
  });

  test('a resumed card gets a fresh count: it is delivered again, alone, and settles', async () => {
    const poison = await send('fails three times, then works');
    let failures = 0;
    const client = new RenderingClient('claude', h, bot, () =>
      failures++ < 3 ? new Error('claude: stream closed') : { ok: true },
    );
    start(client);
    await until(async () => (await stateOf(poison)).state === 'returned', 'returned');
    await resumeQueue(h.ctx, h.owner, 'bot', poison);
    await until(() => reports.length === 4, 'the fourth turn settled');
    expect((await stateOf(poison)).state).toBe('handled');
    expect(reports.map((r) => r.outcome)).toEqual(['abandoned', 'abandoned', 'abandoned', 'ok']);
    expect(client.turns).toHaveLength(4);
    const rows = await h.ctx.store.db.selectFrom('dispatch_attempts').selectAll().execute();
    expect(rows).toEqual([]);
  });

  test('a client that dies on a message each time stops each driver run, and the third restart returns it before dispatch', async () => {
    const poison = await send('the client dies on this');
    const innocent = await send('fine');
    const dispatched: string[][] = [];
    for (let run = 1; run <= DEFAULT_MAX_DISPATCH_ATTEMPTS; run++) {
      const client = new RenderingClient('claude', h, bot, (ids) =>
        ids.includes(poison) ? 'die' : { ok: true },
      );
      await expect(start(client).done).rejects.toBeInstanceOf(ClientGoneError);
      dispatched.push(...client.turns.map((t) => t.ids));
    }
    expect(dispatched).toEqual([[poison, innocent], [poison, innocent], [poison]]);
    const client = new RenderingClient('claude', h, bot, () => ({ ok: true }));
    start(client);
    await until(async () => (await stateOf(poison)).state === 'returned', 'returned before dispatch');
    expect((await stateOf(poison)).returned_reason).toBe(
      '3 turns carrying it ended without settling; last: claude exited (code 1)',
    );
    await withdrawMessage(h.ctx, h.owner, 'bot', poison);
    await until(async () => (await stateOf(innocent)).state === 'handled', 'the innocent message handled');
    expect(client.turns.map((t) => t.ids)).toEqual([[innocent]]);
  });

  test('one client death re-delivers the same turn as it was; only a repeat splits it', async () => {
    const ids = [await send('a'), await send('b'), await send('c')];
    const dying = new RenderingClient('codex', h, bot, () => 'die');
    await expect(start(dying).done).rejects.toBeInstanceOf(ClientGoneError);
    const client = new RenderingClient('codex', h, bot, () => ({ ok: true }));
    start(client);
    await until(() => reports.length === 2, 'the second turn settled');
    expect([...dying.turns, ...client.turns].map((t) => t.ids)).toEqual([ids, ids]);
    expect(reports[1]).toMatchObject({ outcome: 'ok', handled: ids });
    expect(await h.ctx.store.db.selectFrom('dispatch_attempts').selectAll().execute()).toEqual([]);
  });

  test('stopping the driver mid-turn (SIGINT/SIGTERM) is not held against the message, however often', async () => {
    const id = await send('slow');
    for (let run = 0; run < DEFAULT_MAX_DISPATCH_ATTEMPTS + 2; run++) {
      const client = new RenderingClient('claude', h, bot, () => 'hang');
      const { stop, done } = start(client);
      await until(() => client.turns.length === 1, 'a turn in flight');
      stop.abort();
      await done;
    }
    expect((await stateOf(id)).state).toBe('waiting');
    expect(await h.ctx.store.db.selectFrom('dispatch_attempts').selectAll().execute()).toEqual([]);
    const client = new RenderingClient('claude', h, bot, () => ({ ok: true }));
    start(client);
    await until(async () => (await stateOf(id)).state === 'handled', 'handled');
  });
});
