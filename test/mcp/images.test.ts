import { existsSync, readFileSync } from 'node:fs';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { pixelBombPng, truncatedPng } from '../support/poison-images.js';
import { connectInMemory, type ToolCaller } from './support.js';

interface ImageResult {
  text: string;
  isError: boolean;
  image?: { data: string; mimeType: string };
  textBlocks: number;
}

describe('channel_read_image', () => {
  let t: TestHost;
  let alice: Principal;
  let mcp: ToolCaller;

  beforeAll(async () => {
    t = await openTestHost();
    const bot = await t.agent('bot');
    alice = await t.person('alice');
    await t.manage('bot', 'alice'); // only its managers add an agent to a group
    await createChannel(t.ctx, alice, { name: 'pics', members: ['bot'] });
    mcp = await connectInMemory(t.ctx, bot);
  });
  afterAll(async () => {
    await mcp.close();
    await t.close();
  });

  /** Uploads as alice, posts it to #pics, returns the attachment id. */
  const post = async (bytes: Uint8Array, name: string, to = '#pics') => {
    const ref = await putMedia(t.ctx, alice, bytes, name);
    await sendMessage(t.ctx, alice, { to, body: '', attachmentIds: [ref.attachment_id] });
    return ref.attachment_id;
  };
  const read = async (attachmentId: string): Promise<ImageResult> => {
    const r = (await mcp.client.callTool({
      name: 'channel_read_image',
      arguments: { attachment_id: attachmentId },
    })) as {
      content: { type: string; text?: string; data?: string; mimeType?: string }[];
      isError?: boolean;
      structuredContent?: unknown;
    };
    expect(r.structuredContent).toBeUndefined();
    const texts = r.content.filter((c) => c.type === 'text');
    const image = r.content.find((c) => c.type === 'image');
    return {
      text: texts[0]?.text ?? '',
      isError: r.isError === true,
      textBlocks: texts.length,
      ...(image ? { image: { data: image.data as string, mimeType: image.mimeType as string } } : {}),
    };
  };
  const png = (width: number, height: number, noise = false) => {
    const channels = 3;
    const raw = noise
      ? Buffer.from(Array.from({ length: width * height * channels }, () => Math.floor(Math.random() * 256)))
      : Buffer.alloc(width * height * channels, 200);
    return sharp(raw, { raw: { width, height, channels } }).png({ compressionLevel: 9 }).toBuffer();
  };

  it('returns a small image as is, with one short text block describing it', async () => {
    const bytes = await png(8, 8);
    const r = await read(await post(bytes, 'red.png'));
    expect(r.isError).toBe(false);
    expect(r.textBlocks).toBe(1);
    expect(Buffer.from(r.image!.data, 'base64')).toEqual(bytes);
    expect(JSON.parse(r.text)).toMatchObject({
      name: 'red.png',
      mime: 'image/png',
      width: 8,
      height: 8,
      downscaled: false,
    });
  });

  it('downscales an image whose long side exceeds 8000 px', async () => {
    const r = await read(await post(await png(9_000, 20), 'wide.png'));
    const meta = await sharp(Buffer.from(r.image!.data, 'base64')).metadata();
    expect(meta.width).toBeLessThanOrEqual(8_000);
    expect(JSON.parse(r.text)).toMatchObject({ downscaled: true, width: meta.width });
  });

  it('downscales an image over 5 MB until it fits', async () => {
    const bytes = await png(1_500, 1_500, true);
    expect(bytes.length).toBeGreaterThan(5 * 1024 * 1024);
    const r = await read(await post(bytes, 'noise.png'));
    const out = Buffer.from(r.image!.data, 'base64');
    expect(out.length).toBeLessThanOrEqual(5 * 1024 * 1024);
    expect((await sharp(out).metadata()).width).toBeGreaterThan(100);
  }, 60_000);

  it('refuses a non-image with a pointer to a local copy of its bytes', async () => {
    const r = await read(await post(new TextEncoder().encode('just text\n'), 'notes.txt'));
    expect(r.isError).toBe(true);
    const error = JSON.parse(r.text).error;
    expect(error.code).toBe('invalid_params');
    const path = /its bytes are at (.+)$/.exec(error.message)?.[1] as string;
    expect(existsSync(path)).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('just text\n');
  });

  it('refuses a truncated PNG and a pixel bomb in one line each, without decoding the bomb', async () => {
    const broken = await read(await post(truncatedPng(), 'broken.png'));
    expect(broken.isError).toBe(true);
    expect(JSON.parse(broken.text).error).toMatchObject({ code: 'invalid_params' });
    expect(JSON.parse(broken.text).error.message).toMatch(/^the image could not be decoded/);
    const started = performance.now();
    const bomb = await read(await post(pixelBombPng(), 'bomb.png'));
    expect(performance.now() - started).toBeLessThan(2000);
    expect(bomb.isError).toBe(true);
    expect(JSON.parse(bomb.text).error).toEqual({
      code: 'too_large',
      message: 'the image is larger than 100 megapixels and is not decoded',
    });
    expect(bomb.image).toBeUndefined();
  });

  it('refuses an attachment the caller cannot see', async () => {
    const secret = await createChannel(t.ctx, alice, { name: 'secret', members: [] });
    const id = await post(await png(4, 4), 'hidden.png', secret.id);
    const r = await read(id);
    expect(r.isError).toBe(true);
    expect(JSON.parse(r.text).error.code).toBe('not_found');
    expect(r.image).toBeUndefined();
  });
});
