// `sluice drive codex` end to end with the REAL Codex app-server against the scripted model
// server (test/e2e/support). Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-codex.e2e.test.ts
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { resumeQueue } from '../../src/host/queue/queue.js';
import {
  type DriveHome,
  type DriverProcess,
  deliveredTurns,
  envelopeIds,
  envelopesIn,
  eventually,
  openDriveHome,
  sleep,
  startDriver,
} from '../drivers/drive-harness.js';
import { ensureClients } from './support/clients.js';
import {
  findText,
  type ModelServer,
  startModelServer,
  toolResults,
  userContent,
} from './support/model-server.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

describe.skipIf(!enabled)('sluice drive codex (real Codex app-server)', () => {
  let server: ModelServer;
  let codexBin: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    codexBin = (await ensureClients()).codex;
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(): Promise<{ h: DriveHome; start: () => DriverProcess }> {
    const h = await openDriveHome();
    const codexHome = makeCodexHome({ server });
    cleanups.push(() => rmSync(codexHome.root, { recursive: true, force: true }));
    const env = codexEnv(codexHome, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: codexBin });
    cleanups.push(() => h.close());
    const start = () => {
      const d = startDriver('codex', ['--as', h.agent.name, '--cwd', codexHome.cwd], env);
      cleanups.push(() => d.stop());
      return d;
    };
    return { h, start };
  }

  const mainCalls = () => server.mainCalls();

  test('an image arrives as input_image from a localImage, a zip as a path pointer, the envelope as context; the turn settles handled', async () => {
    server.reset(() => ({ text: 'seen' }));
    const { h, start } = await setup();
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#cc3366' } })
      .png()
      .toBuffer();
    const zipPayload = randomBytes(2048);
    const zip = Buffer.concat([Buffer.from('PK\u0003\u0004', 'latin1'), Buffer.alloc(26), zipPayload]);
    const id = await h.send('new time attached', [
      { bytes: png, name: 'time.png' },
      { bytes: zip, name: 'bundle.zip' },
    ]);
    const d = start();
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);

    const first = mainCalls()[0]!;
    const images = userContent(first).images;
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({
      type: 'input_image',
      mediaType: 'image/png',
      data: png.toString('base64'),
    });
    const pointer = userContent(first).texts.find(
      (t) => t.includes('"bundle.zip"') && t.includes('is saved at'),
    );
    expect(pointer).toBeDefined();
    const path = /"bundle\.zip" \(application\/zip, \d+ bytes\) from message \S+ is saved at (\S+)/.exec(
      pointer!,
    )![1]!;
    expect(path.startsWith(join(h.home, 'materialized'))).toBe(true);
    expect(readFileSync(path).equals(zip)).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // The envelope travels as additionalContext: a developer message wrapped in <sluice>.
    const context = findText(first, '"schema":"sluice.delivery.v1"');
    expect(context).toHaveLength(1);
    expect(context[0]!.role).toBe('developer');
    expect(context[0]!.text.startsWith('<sluice>[sluice] inbox for bot')).toBe(true);
    expect(deliveredTurns(mainCalls())).toEqual([[id]]);
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);

    const db = Buffer.concat(
      ['sluice.db', 'sluice.db-wal']
        .map((f) => join(h.home, f))
        .filter(existsSync)
        .map((f) => readFileSync(f)),
    );
    expect(db.includes(png.subarray(8, 40))).toBe(false);
    expect(db.includes(zipPayload.subarray(0, 64))).toBe(false);
  }, 240_000);

  test('the model replies with the sluice MCP tool without an approval prompt (its shell cannot reach the store)', async () => {
    server.reset((req) => {
      const envelope = envelopesIn(req).at(-1) ?? '';
      const id = envelopeIds(envelope)[0];
      if (!id) throw new Error('no delivery in the request');
      return toolResults(req).length === 0
        ? { toolCalls: [{ name: 'mcp__sluice__message_reply', input: { message_id: id, body: 'on it' } }] }
        : { text: 'replied' };
    });
    const { h, start } = await setup();
    const id = await h.send('please confirm');
    const d = start();
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);
    expect(server.scriptErrors).toEqual([]);
    const reply = await h.ctx.store.db
      .selectFrom('messages')
      .select(['body', 'author_id'])
      .where('reply_to', '=', id)
      .executeTakeFirst();
    expect(
      reply,
      toolResults(mainCalls().at(-1)!)
        .map((t) => t.text)
        .join('\n'),
    ).toEqual({
      body: 'on it',
      author_id: h.agent.id,
    });
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);
  }, 240_000);

  test('a failed turn returns its ids and blocks the queue; resume re-delivers them first; a message sent mid-turn waits for the next turn', async () => {
    let fail = true;
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    server.reset(async (_req, ctx) => {
      if (fail) return { error: { status: 500, message: 'scripted failure' } };
      if (ctx.mainIndex === 0) await gate;
      return { text: `turn ${ctx.mainIndex}` };
    });
    const { h, start } = await setup();
    const ids = [await h.send('one'), await h.send('two')];
    const d = start();
    await d.waitForOutput(/failed \(model_error\): 2 delivered/, 120_000);
    expect(await h.states()).toEqual(
      ids.map((id) => ({ id, state: 'returned', failure_kind: 'model_error' })),
    );

    fail = false;
    server.reset();
    await sleep(2000);
    expect(mainCalls()).toHaveLength(0);

    for (const id of ids) await resumeQueue(h.ctx, h.owner, h.agent.name, id);
    await eventually(async () => (mainCalls().length > 0 ? true : undefined), 60_000, 'the resumed turn');
    const during = await h.send('three');
    release();
    await eventually(
      async () => ((await h.states()).every((s) => s.state === 'handled') ? true : undefined),
      60_000,
      'all handled',
    );
    expect(deliveredTurns(mainCalls())).toEqual([ids, [during]]);
  }, 240_000);
  test('killing the driver mid-turn consumes nothing; a restart abandons the turn and re-delivers the same ids in order', async () => {
    let hold = true;
    server.reset(() => (hold ? { text: 'late', delayMs: 60_000 } : { text: 'done' }));
    const { h, start } = await setup();
    const ids = [await h.send('first'), await h.send('second')];
    const first = start();
    await eventually(
      async () => (mainCalls().length > 0 ? true : undefined),
      120_000,
      'the first model call',
    );
    expect(deliveredTurns(mainCalls())).toEqual([ids]);
    first.killDriver();
    await first.exited;
    first.killTree();
    expect((await h.states()).map((s) => s.state)).toEqual(['waiting', 'waiting']);

    hold = false;
    server.reset();
    const second = start();
    await second.waitForOutput(/abandoned stale turn/, 60_000);
    await second.waitForOutput(/ ok: 2 delivered/, 120_000);
    expect(deliveredTurns(mainCalls())).toEqual([ids]);
    expect((await h.states()).map((s) => s.state)).toEqual(['handled', 'handled']);
  }, 240_000);
});
