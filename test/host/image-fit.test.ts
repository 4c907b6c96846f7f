import sharp from 'sharp';
import { describe, expect, test } from 'vitest';
import {
  CLAUDE_IMAGE_LIMITS,
  checkImage,
  DEFAULT_IMAGE_LIMITS,
  fitImage,
  IMAGE_DECODE_LIMITS,
  INLINE_IMAGE_MIMES,
} from '../../src/host/media/image-fit.js';
import { pixelBombPng, truncatedPng } from '../support/poison-images.js';

const solid = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#336699' } });
const base64Length = (n: number) => Math.ceil(n / 3) * 4;

describe('fitImage', () => {
  test('returns an image within the limits untouched', async () => {
    const png = await solid(100, 50).png().toBuffer();
    const fitted = await fitImage(png, 'image/png');
    expect(fitted).toMatchObject({ downscaled: false, mime: 'image/png', width: 100, height: 50 });
    expect(fitted.data.equals(png)).toBe(true);
  });

  test('scales a picture over 8000 px on the long side down to 8000, keeping the format', async () => {
    const jpeg = await solid(9000, 300).jpeg().toBuffer();
    const fitted = await fitImage(jpeg, 'image/jpeg', CLAUDE_IMAGE_LIMITS);
    const meta = await sharp(fitted.data).metadata();
    expect(fitted).toMatchObject({ downscaled: true, mime: 'image/jpeg', width: 8000, height: 267 });
    expect([meta.width, meta.height]).toEqual([8000, 267]);
  });

  test('shrinks a noisy PNG until it fits, and stays PNG', async () => {
    const noisy = await sharp({
      create: {
        width: 1400,
        height: 1400,
        channels: 3,
        background: '#000',
        noise: { type: 'gaussian', mean: 128, sigma: 80 },
      },
    })
      .png()
      .toBuffer();
    const limits = { maxBytes: 768 * 1024, maxSide: 8000 };
    expect(noisy.length).toBeGreaterThan(limits.maxBytes);
    const fitted = await fitImage(noisy, 'image/png', limits);
    expect(fitted.mime).toBe('image/png');
    expect(fitted.data.length).toBeLessThanOrEqual(limits.maxBytes);
    expect((await sharp(fitted.data).metadata()).format).toBe('png');
  });

  test('turns an oversized GIF into a PNG', async () => {
    const gif = await solid(8200, 10).gif().toBuffer();
    const fitted = await fitImage(gif, 'image/gif');
    expect(fitted.mime).toBe('image/png');
    expect((await sharp(fitted.data).metadata()).width).toBe(8000);
  });

  test('re-encodes an image format models do not take inline (TIFF) as PNG', async () => {
    const tiff = await solid(20, 10).tiff().toBuffer();
    const fitted = await fitImage(tiff, 'image/tiff');
    expect(fitted).toMatchObject({ mime: 'image/png', downscaled: true, width: 20, height: 10 });
  });

  test('is deterministic, so a driver and a test agree on the bytes', async () => {
    const jpeg = await solid(8500, 100).jpeg().toBuffer();
    const [a, b] = [await fitImage(jpeg, 'image/jpeg'), await fitImage(jpeg, 'image/jpeg')];
    expect(a.data.equals(b.data)).toBe(true);
  });

  test('refuses bytes that are not an image with one clear error', async () => {
    await expect(fitImage(new TextEncoder().encode('not an image'), 'image/png')).rejects.toMatchObject({
      code: 'invalid_params',
    });
  });

  test('refuses a truncated PNG (valid header, broken pixels) with a one-line error, even one small enough to pass as is', async () => {
    const error = await fitImage(truncatedPng(), 'image/png').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'invalid_params' });
    expect((error as Error).message).toMatch(/^the image could not be decoded/);
    expect((error as Error).message).not.toContain('\n');
    const small = (await solid(8, 8).png().toBuffer()).subarray(0, 60);
    await expect(fitImage(small, 'image/png')).rejects.toMatchObject({ code: 'invalid_params' });
  });

  test('refuses a pixel bomb from its header, in well under a second', async () => {
    const bomb = pixelBombPng();
    expect(bomb.length).toBeLessThan(200);
    const started = performance.now();
    await expect(fitImage(bomb, 'image/png', CLAUDE_IMAGE_LIMITS)).rejects.toMatchObject({
      code: 'too_large',
      message: 'the image is larger than 100 megapixels and is not decoded',
    });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test('the pixel limit is a setting: a 2000 × 2000 image passes at 100 Mpx and is refused at 1 Mpx', async () => {
    const png = await solid(2000, 2000).png().toBuffer();
    await expect(checkImage(png)).resolves.toEqual({ width: 2000, height: 2000 });
    await expect(checkImage(png, { maxPixels: 1_000_000, timeoutSeconds: 5 })).rejects.toMatchObject({
      code: 'too_large',
    });
  });

  test('the time budget covers the whole image: once it is spent the image is refused in one line', async () => {
    const png = await solid(64, 64).png().toBuffer();
    await expect(
      fitImage(png, 'image/png', { maxBytes: 10, maxSide: 8000, timeoutSeconds: 0 }),
    ).rejects.toMatchObject({
      code: 'too_large',
      message: 'processing the image took longer than 0 s',
    });
  });

  test('the limits: Claude 5 MiB of base64 and 8000 px, channel_read_image 5 MB and 8000 px, 100 Mpx decode', () => {
    expect(base64Length(CLAUDE_IMAGE_LIMITS.maxBytes)).toBe(5 * 1024 * 1024);
    expect(base64Length(CLAUDE_IMAGE_LIMITS.maxBytes + 1)).toBeGreaterThan(5 * 1024 * 1024);
    expect(CLAUDE_IMAGE_LIMITS.maxSide).toBe(8000);
    expect(DEFAULT_IMAGE_LIMITS).toEqual({ maxBytes: 5 * 1024 * 1024, maxSide: 8000 });
    expect(IMAGE_DECODE_LIMITS.maxPixels).toBe(100_000_000);
    expect([...INLINE_IMAGE_MIMES]).toEqual(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
  });
});
