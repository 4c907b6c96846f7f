// `sluice drive claude` end to end with the REAL Claude Code client against the scripted model
// server (test/e2e/support). Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-claude.e2e.test.ts
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { CLAUDE_IMAGE_LIMITS, fitImage } from '../../src/host/media/image-fit.js';
import { resumeQueue } from '../../src/host/queue/queue.js';
import {
  type DriveHome,
  type DriverProcess,
  deliveredTurns,
  envelopesIn,
  eventually,
  openDriveHome,
  sleep,
  startDriver,
} from '../drivers/drive-harness.js';
import { ensureClients } from './support/clients.js';
import {
  isMainAgentRequest,
  type ModelServer,
  shellCall,
  startModelServer,
  toolResults,
  userContent,
} from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';

const enabled = process.env.SLUICE_E2E === '1';

/** A small but valid ZIP holding one stored file with `payload` as its content. */
function zipOf(name: string, payload: Buffer): Buffer {
  const fileName = Buffer.from(name);
  const crc = crc32(payload);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(payload.length, 18);
  local.writeUInt32LE(payload.length, 22);
  local.writeUInt16LE(fileName.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(payload.length, 20);
  central.writeUInt32LE(payload.length, 24);
  central.writeUInt16LE(fileName.length, 28);
  const localSize = local.length + fileName.length + payload.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + fileName.length, 12);
  end.writeUInt32LE(localSize, 16);
  return Buffer.concat([local, fileName, payload, central, fileName, end]);
}

/** A one-page PDF whose content stream carries `marker`. */
function pdfWith(marker: string): Buffer {
  const stream = `BT /F1 12 Tf 72 720 Td (${marker}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const off of offsets) body += `${String(off).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

/** The part of an Anthropic content block these checks read. */
interface Block {
  type: string;
  source: { type: string; media_type: string; data: string };
}

/**
 * A 9000 × 2600 JPEG over 12 MB: three coloured bands under uniform noise (so it compresses badly).
 * The pixels are made here, not by sharp's gaussian noise and PNG composites: those took about 7 s
 * of CPU, this about 1.5 s.
 */
function bigPhoto(): Promise<Buffer> {
  const width = 9000;
  const height = 2600;
  const bands = [
    [0xe0, 0x20, 0x20],
    [0x20, 0xc0, 0x40],
    [0x20, 0x40, 0xe0],
  ] as const;
  const pixels = new Uint8ClampedArray(width * height * 3);
  let seed = 0x9e3779b9; // xorshift32: deterministic noise, ±40 around each band's colour
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const band = bands[Math.floor((x * 3) / width)] as readonly number[];
      const o = (y * width + x) * 3;
      for (let c = 0; c < 3; c++) {
        seed ^= seed << 13;
        seed ^= seed >>> 17;
        seed ^= seed << 5;
        pixels[o + c] = (band[c] as number) + ((seed >>> 0) % 81) - 40;
      }
    }
  }
  return sharp(Buffer.from(pixels.buffer), { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 96 })
    .toBuffer();
}

/** Mean absolute difference (0–255) of two images reduced to a 36 × 10 RGB thumbnail. */
async function thumbnailDistance(a: Uint8Array, b: Uint8Array): Promise<number> {
  const thumb = (x: Uint8Array) => sharp(x).resize(36, 10, { fit: 'fill' }).removeAlpha().raw().toBuffer();
  const [ta, tb] = await Promise.all([thumb(a), thumb(b)]);
  let sum = 0;
  for (let i = 0; i < ta.length; i++) sum += Math.abs(ta[i]! - tb[i]!);
  return sum / ta.length;
}

/** A wrapper for claude that records the driver's stdin (the outbound messages) to a file. */
function teeClaude(dir: string, claude: string): { bin: string; log: string } {
  const log = join(dir, 'claude-stdin.jsonl');
  const bin = join(dir, 'claude-tee.sh');
  writeFileSync(bin, `#!/bin/sh\ntee '${log}' | exec '${claude}' "$@"\n`, { mode: 0o755 });
  return { bin, log };
}

describe.skipIf(!enabled)('sluice drive claude (real Claude Code)', () => {
  let server: ModelServer;
  let claudeBin: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    claudeBin = (await ensureClients()).claude;
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  let stdinLog = '';
  async function setup(): Promise<{ h: DriveHome; start: (extra?: string[]) => DriverProcess }> {
    const h = await openDriveHome();
    const claudeHome = makeClaudeHome();
    cleanups.push(() => rmSync(claudeHome.root, { recursive: true, force: true }));
    const tee = teeClaude(claudeHome.root, claudeBin);
    stdinLog = tee.log;
    const env = claudeEnv(server, claudeHome, {
      env: { SLUICE_HOME: h.home, SLUICE_CLAUDE_BIN: tee.bin },
    });
    cleanups.push(() => h.close());
    const start = (extra: string[] = []) => {
      const d = startDriver(
        'claude',
        ['--as', h.agent.name, '--cwd', claudeHome.cwd, ...extra, '--', '--no-session-persistence'],
        env,
      );
      cleanups.push(() => d.stop());
      return d;
    };
    return { h, start };
  }

  const mainCalls = () => server.requests.filter(isMainAgentRequest);

  test('attachments reach the model natively: image blocks (one downscaled), a PDF document, a zip pointer; the database holds no bytes', async () => {
    server.reset(() => ({ text: 'seen' }));
    const { h, start } = await setup();
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
      .png()
      .toBuffer();
    const big = await bigPhoto();
    expect(big.length).toBeGreaterThan(12 * 1024 * 1024);
    const pdf = pdfWith(`PDF-MARKER-${randomBytes(8).toString('hex')}`);
    const zipPayload = randomBytes(4096);
    const zip = zipOf('inner.bin', zipPayload);
    const id = await h.send('here is the new time, change the invitation', [
      { bytes: png, name: 'screenshot.png' },
      { bytes: big, name: 'huge photo.jpg' },
      { bytes: pdf, name: 'invite.pdf' },
      { bytes: zip, name: '../../etc/passwd.zip' },
    ]);
    const d = start();
    await d.waitForOutput(/ ok: 1 delivered/, 120_000);

    const first = mainCalls()[0]!;
    const images = userContent(first).images;
    expect(images).toHaveLength(2);
    expect(images[0]).toMatchObject({ mediaType: 'image/png', data: png.toString('base64') });

    // The driver's outbound message (recorded by the stdin tee) carries our downscaled copy:
    // within 8000 px and 5 MiB of base64, and exactly what fitImage makes of the upload.
    const outbound = readFileSync(stdinLog, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      // The session opens with the driver's `initialize` control request.
      .filter((l: { type?: string }) => l.type === 'user');
    const sentImages = (outbound[0].message.content as Block[]).filter((b) => b.type === 'image');
    const fitted = await fitImage(big, 'image/jpeg', CLAUDE_IMAGE_LIMITS);
    expect(fitted.downscaled).toBe(true);
    expect(sentImages[1]!.source.data).toBe(fitted.data.toString('base64'));
    expect(sentImages[1]!.source.data.length).toBeLessThanOrEqual(5 * 1024 * 1024);
    const sentMeta = await sharp(fitted.data).metadata();
    expect(Math.max(sentMeta.width!, sentMeta.height!)).toBeLessThanOrEqual(8000);
    // Claude Code may shrink it further on its way to the model; what arrives is still the
    // uploaded picture (same proportions, same content at thumbnail scale).
    const received = Buffer.from(images[1]!.data!, 'base64');
    const meta = await sharp(received).metadata();
    expect(Math.abs(meta.width! / meta.height! - 9000 / 2600)).toBeLessThan(0.02);
    expect(await thumbnailDistance(received, big)).toBeLessThan(12);
    expect(await thumbnailDistance(received, png)).toBeGreaterThan(40);

    const blocks = (first.body.messages as { content: unknown }[]).flatMap((m) =>
      Array.isArray(m.content) ? (m.content as Block[]) : [],
    );
    const documents = blocks.filter((b) => b?.type === 'document');
    expect(documents).toHaveLength(1);
    expect(documents[0]!.source).toMatchObject({ type: 'base64', media_type: 'application/pdf' });
    expect(Buffer.from(documents[0]!.source.data, 'base64').equals(pdf)).toBe(true);

    const zipPointer = userContent(first).texts.find(
      (t) => t.includes('passwd.zip') && t.includes('is saved at'),
    );
    expect(zipPointer).toBeDefined();
    const path = /"passwd\.zip" \(application\/zip, \d+ bytes\) from message \S+ is saved at (\S+)/.exec(
      zipPointer!,
    )![1]!;
    expect(path.startsWith(join(h.home, 'materialized'))).toBe(true);
    expect(path.endsWith('/passwd.zip')).toBe(true);
    expect(readFileSync(path).equals(zip)).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);

    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);

    // The chat database (and its WAL) never saw the bytes: look for a slice of each attachment.
    const dbFiles = ['sluice.db', 'sluice.db-wal'].map((f) => join(h.home, f)).filter(existsSync);
    const db = Buffer.concat(dbFiles.map((f) => readFileSync(f)));
    for (const bytes of [
      png.subarray(16, 48),
      big.subarray(500_000, 500_064),
      pdf.subarray(pdf.length - 200, pdf.length - 150),
      zipPayload.subarray(0, 64),
    ]) {
      expect(db.includes(bytes)).toBe(false);
      expect(db.includes(Buffer.from(bytes.toString('base64')))).toBe(false);
    }
  }, 240_000);

  test('a successful turn marks exactly the delivered ids handled; later messages wait for the next turn', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    server.reset(async (req, ctx) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      if (ctx.mainIndex === 1) await gate;
      return { text: `turn ${ctx.mainIndex}` };
    });
    const { h, start } = await setup();
    const ids = [await h.send('one'), await h.send('two'), await h.send('three')];
    start(['--max-messages', '2']);
    await eventually(
      async () => ((await h.states())[1]?.state === 'handled' ? true : undefined),
      120_000,
      'turn 1',
    );
    // Turn 2 is held open by the model: exactly the first two are handled, the third is not.
    expect((await h.states()).map((s) => s.state)).toEqual(['handled', 'handled', 'waiting']);
    expect(deliveredTurns(mainCalls())[0]).toEqual(ids.slice(0, 2));
    release();
    await eventually(
      async () => ((await h.states())[2]?.state === 'handled' ? true : undefined),
      60_000,
      'turn 2',
    );
    expect(deliveredTurns(mainCalls())).toEqual([ids.slice(0, 2), ids.slice(2)]);
  }, 240_000);

  test('a model error returns the delivered ids and blocks the queue until a person resumes them', async () => {
    let fail = true;
    server.reset((req, ctx) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      return fail
        ? { error: { status: 500, message: 'scripted failure' } }
        : { text: `turn ${ctx.mainIndex}` };
    });
    const { h, start } = await setup();
    const ids = [await h.send('alpha'), await h.send('beta')];
    const d = start();
    await d.waitForOutput(/failed \(model_error\): 2 delivered/, 120_000);
    expect(await h.states()).toEqual(
      ids.map((id) => ({ id, state: 'returned', failure_kind: 'model_error' })),
    );

    // Blocked: a new message is not dispatched while returned cards wait for a person.
    fail = false;
    const later = await h.send('gamma');
    const callsBefore = mainCalls().length;
    await sleep(3000);
    expect(mainCalls().length).toBe(callsBefore);
    expect((await h.states()).map((s) => s.state)).toEqual(['returned', 'returned', 'waiting']);

    for (const id of ids) await resumeQueue(h.ctx, h.owner, h.agent.name, id);
    await eventually(
      async () => ((await h.states()).every((s) => s.state === 'handled') ? true : undefined),
      60_000,
      'all handled',
    );
    // The resumed cards are delivered first, in their original order.
    const turns = deliveredTurns(mainCalls());
    expect(turns[0]).toEqual(ids);
    expect(turns.slice(1).flat()).toEqual([...ids, later]);
  }, 240_000);

  test('killing the driver mid-turn consumes nothing; a restart abandons the turn and re-delivers the same ids in order', async () => {
    let hold = true;
    server.reset(async (req, ctx) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      if (hold) return { text: 'late', delayMs: 60_000 };
      return { text: `turn ${ctx.mainIndex}` };
    });
    const { h, start } = await setup();
    const ids = [await h.send('first'), await h.send('second'), await h.send('third')];
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
    expect((await h.states()).map((s) => s.state)).toEqual(['waiting', 'waiting', 'waiting']);
    const open = await h.ctx.store.db.selectFrom('turns').selectAll().where('state', '=', 'open').execute();
    expect(open).toHaveLength(1);

    hold = false;
    server.reset();
    const second = start();
    await second.waitForOutput(/abandoned stale turn/, 60_000);
    await second.waitForOutput(/ ok: 3 delivered/, 120_000);
    expect(deliveredTurns(mainCalls())).toEqual([ids]);
    expect((await h.states()).map((s) => s.state)).toEqual(['handled', 'handled', 'handled']);
    const turns = await h.ctx.store.db
      .selectFrom('turns')
      .select(['id', 'state'])
      .orderBy('started_at')
      .execute();
    expect(turns.map((t) => t.state)).toEqual(['abandoned', 'succeeded']);
  }, 240_000);

  test('an oversized head read whole through channel_read is handled by the turn; the model replies with `sluice message reply` without a prompt', async () => {
    const big = `start ${'plain words 長い本文 '.repeat(1500)} end`;
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      const results = toolResults(req);
      const last = results[results.length - 1];
      const envelope = envelopesIn(req).at(-1) ?? '';
      const id = /sluice message read ([0-9A-Za-z]+)/.exec(envelope)?.[1];
      if (!id) throw new Error('no oversized head in the delivery');
      if (last === undefined)
        return { toolCalls: [{ name: 'mcp__sluice__channel_read', input: { message_id: id } }] };
      const fragment = (() => {
        try {
          return JSON.parse(last.text) as { contentCursor?: string | null; complete?: boolean };
        } catch {
          return undefined;
        }
      })();
      if (fragment?.contentCursor) {
        return {
          toolCalls: [
            {
              name: 'mcp__sluice__channel_read',
              input: { message_id: id, content_cursor: fragment.contentCursor },
            },
          ],
        };
      }
      if (fragment?.complete === true)
        return { toolCalls: [shellCall(req, `sluice message reply ${id} -m "read it all"`)] };
      return { text: 'done' };
    });
    const { h, start } = await setup();
    const id = await h.send(big);
    const d = start();
    await d.waitForOutput(/ ok: 0 delivered/, 120_000);
    expect(server.scriptErrors).toEqual([]);
    const reads = mainCalls()
      .flatMap((r) => toolResults(r))
      .filter((t) => t.text.includes('"fragment"'));
    expect(reads.length).toBeGreaterThan(1);
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);
    const reply = await h.ctx.store.db
      .selectFrom('messages')
      .select(['body', 'author_id', 'reply_to'])
      .where('reply_to', '=', id)
      .executeTakeFirst();
    expect(reply).toEqual({ body: 'read it all', author_id: h.agent.id, reply_to: id });
  }, 240_000);

  test('a backlog of 50 messages drains in order over several turns within 16 messages / 16 KiB, none skipped or handled twice', async () => {
    server.reset((req, ctx) =>
      isMainAgentRequest(req) ? { text: `turn ${ctx.mainIndex}` } : { text: 'side' },
    );
    const { h, start } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      // Mixed sizes so both caps bind: every fifth body is ~3 KB.
      const body = i % 5 === 0 ? `big ${i} ${'é'.repeat(1500)}` : `message ${i} 🙂 "quoted" \\ back`;
      ids.push(await h.send(body));
    }
    const d = start();
    await eventually(
      async () => ((await h.states()).every((s) => s.state === 'handled') ? true : undefined),
      180_000,
      'backlog drained',
    );
    // The driver logs a turn after its settle commits: the last turn's line can follow the states.
    const turnLog = () =>
      readFileSync(join(h.home, 'logs', `drive-${h.agent.name}.log`), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .filter((e) => e.event === 'turn');
    const log = await eventually(
      async () => {
        const entries = turnLog();
        return entries.flatMap((e) => e.handled).length >= ids.length ? entries : undefined;
      },
      30_000,
      'every settled turn logged',
    );
    const turns = deliveredTurns(mainCalls());
    expect(turns.length).toBeGreaterThanOrEqual(4);
    for (const t of turns) expect(t.length).toBeLessThanOrEqual(16);
    expect(turns.flat()).toEqual(ids);
    for (const req of mainCalls()) {
      const texts = userContent(req).texts.filter((t) => t.includes('sluice.delivery.v1'));
      for (const t of texts) expect(Buffer.byteLength(t)).toBeLessThanOrEqual(16_384);
    }
    expect(log.flatMap((e) => e.handled)).toEqual(ids);
    expect(d.stdout()).toMatch(/ ok: \d+ delivered/);
  }, 240_000);
});
