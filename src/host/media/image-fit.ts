import type { OutputInfo, Sharp } from 'sharp';

import { SluiceError } from '../../core/errors.js';

type SharpFactory = typeof import('sharp');
let sharpLoaded: Promise<SharpFactory> | undefined;

/**
 * sharp loads its native library when imported: only a process that fits an image pays for it,
 * not every CLI command that imports the media feature (test/cli/cli-start.test.ts).
 */
function loadSharp(): Promise<SharpFactory> {
  // A CommonJS module imported from ESM: its export is the namespace's default.
  sharpLoaded ??= import('sharp').then((m) => (m as unknown as { default: SharpFactory }).default);
  return sharpLoaded;
}

/**
 * The image formats models take inline (Anthropic and OpenAI alike). Every surface that decides
 * "is this an image block?" asks this one list.
 */
export const INLINE_IMAGE_MIMES: ReadonlySet<string> = new Set([
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
]);

/** Whether a MIME type is one models take inline. */
export function isInlineImage(mime: string): boolean {
  return INLINE_IMAGE_MIMES.has(mime);
}

/**
 * How much work one image may cost to decode. A sender chooses the bytes, so a small file whose
 * header claims 100,000 × 100,000 pixels (10 Gpx) must be refused before it is decoded, and a
 * decode that crawls must end.
 */
export interface ImageDecodeLimits {
  /** Width × height above which an image is refused unread. */
  maxPixels: number;
  /** Wall time all decoding and re-encoding of one image may take, in seconds (libvips stops it). */
  timeoutSeconds: number;
}

export const IMAGE_DECODE_LIMITS: Readonly<ImageDecodeLimits> = Object.freeze({
  maxPixels: 100_000_000,
  timeoutSeconds: 20,
});

/** What the model may receive: decoded bytes and the long side, plus the decode limits. */
export interface ImageLimits extends Partial<ImageDecodeLimits> {
  /** Bytes of the encoded image (not of its base64). */
  maxBytes: number;
  /** Long side, in pixels. */
  maxSide: number;
}

/** `channel_read_image`: 5 MB decoded, 8000 px (DESIGN.md §3.1). */
export const DEFAULT_IMAGE_LIMITS: Readonly<ImageLimits> = Object.freeze({
  maxBytes: 5 * 1024 * 1024,
  maxSide: 8000,
});

/**
 * Claude's inline image limits. The API measures the base64 text (5 MiB), so the encoded bytes
 * may be at most three quarters of that (3,932,160 bytes ⇔ base64 ≤ 5,242,880); 8000 px long side.
 */
export const CLAUDE_IMAGE_LIMITS: Readonly<ImageLimits> = Object.freeze({
  maxBytes: ((5 * 1024 * 1024) / 4) * 3,
  maxSide: 8000,
});

/** An image ready to hand to a model, and how it was made to fit. */
export interface FittedImage {
  data: Buffer;
  mime: string;
  width: number;
  height: number;
  /** True when the bytes were re-encoded (smaller, or into an inline format) from the original. */
  downscaled: boolean;
}

const MAX_ATTEMPTS = 12;

/** One image's time budget: each libvips step gets what is left of it (whole seconds, at least 1). */
class Deadline {
  private readonly endsAt: number;
  constructor(private readonly limits: ImageDecodeLimits) {
    this.endsAt = Date.now() + limits.timeoutSeconds * 1000;
  }
  seconds(): number {
    const left = Math.ceil((this.endsAt - Date.now()) / 1000);
    if (left <= 0) throw tooSlow(this.limits);
    return left;
  }
}

function tooSlow(limits: ImageDecodeLimits): SluiceError {
  return new SluiceError('too_large', `processing the image took longer than ${limits.timeoutSeconds} s`);
}

/** Decoding under the limits: the pixel cap is checked from the header before any pixel is read. */
async function decoder(bytes: Uint8Array, limits: ImageDecodeLimits, deadline: Deadline): Promise<Sharp> {
  const sharp = await loadSharp();
  return sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: 'warning' }).timeout({
    seconds: deadline.seconds(),
  });
}

function unreadable(err: unknown, limits: ImageDecodeLimits): SluiceError {
  if (err instanceof SluiceError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (/pixel limit/i.test(message)) {
    return new SluiceError(
      'too_large',
      `the image is larger than ${limits.maxPixels / 1_000_000} megapixels and is not decoded`,
    );
  }
  if (/timeout/i.test(message)) return tooSlow(limits);
  // libvips messages are one line at most but say nothing a model can act on beyond "broken".
  const detail = message.split('\n')[0]?.slice(0, 120) ?? '';
  return new SluiceError('invalid_params', `the image could not be decoded${detail ? ` (${detail})` : ''}`);
}

/**
 * Decodes the whole image within the limits and returns its size; rejects with a one-line
 * `SluiceError` when it is not a readable image (bad header, truncated or corrupt pixels, over
 * the pixel limit, too slow). Cheap on memory: the pixels are shrunk to a thumbnail as they are read.
 */
export function checkImage(
  bytes: Uint8Array,
  limits: ImageDecodeLimits = IMAGE_DECODE_LIMITS,
): Promise<{ width: number; height: number }> {
  return inspect(bytes, limits, new Deadline(limits));
}

async function inspect(
  bytes: Uint8Array,
  limits: ImageDecodeLimits,
  deadline: Deadline,
): Promise<{ width: number; height: number }> {
  let width: number;
  let height: number;
  try {
    const meta = await (await decoder(bytes, limits, deadline)).metadata();
    width = meta.autoOrient?.width ?? meta.width ?? 0;
    height = meta.autoOrient?.height ?? meta.height ?? 0;
    if (width === 0 || height === 0) throw new Error('no size in the header');
    await (await decoder(bytes, limits, deadline))
      .resize({ width: 64, height: 64, fit: 'inside' })
      .raw()
      .toBuffer();
  } catch (err) {
    throw unreadable(err, limits);
  }
  return { width, height };
}

/**
 * The image as is when it decodes and is within the limits, else a re-encoded copy that is.
 * The source is decoded once (oriented, capped to `maxSide`), then encoded: JPEG and WebP keep
 * their format at quality 85, then 70, then smaller; PNG stays PNG (lossless, so screenshots keep
 * crisp text) and gets smaller; GIF and any other format become PNG (first frame). Each smaller
 * step is sized from how far the last one overshot. Deterministic for one input. Refuses (a
 * one-line `SluiceError`) an image that does not decode within {@link IMAGE_DECODE_LIMITS}.
 */
export async function fitImage(
  bytes: Uint8Array,
  mime: string,
  limits: ImageLimits = DEFAULT_IMAGE_LIMITS,
): Promise<FittedImage> {
  const decode: ImageDecodeLimits = {
    maxPixels: limits.maxPixels ?? IMAGE_DECODE_LIMITS.maxPixels,
    timeoutSeconds: limits.timeoutSeconds ?? IMAGE_DECODE_LIMITS.timeoutSeconds,
  };
  const deadline = new Deadline(decode);
  const { width, height } = await inspect(bytes, decode, deadline);
  const longSide = Math.max(width, height);
  if (isInlineImage(mime) && bytes.length <= limits.maxBytes && longSide <= limits.maxSide) {
    return { data: Buffer.from(bytes), mime, width, height, downscaled: false };
  }
  const format: 'jpeg' | 'png' | 'webp' =
    mime === 'image/jpeg' ? 'jpeg' : mime === 'image/webp' ? 'webp' : 'png';
  const cap = Math.min(longSide, limits.maxSide);
  let decoded: { data: Buffer; info: OutputInfo };
  try {
    // Decode (and orient) once; every attempt below resizes these pixels, not the source file.
    decoded = await (await decoder(bytes, decode, deadline))
      .rotate()
      .resize({ width: cap, height: cap, fit: 'inside', withoutEnlargement: true })
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    throw unreadable(err, decode);
  }
  const raw = { width: decoded.info.width, height: decoded.info.height, channels: decoded.info.channels };
  let side = Math.max(raw.width, raw.height);
  let quality = 85;
  for (let attempt = 0; attempt < MAX_ATTEMPTS && side >= 1; attempt++) {
    let pipeline = (await loadSharp())(decoded.data, { raw }).timeout({ seconds: deadline.seconds() });
    if (side < Math.max(raw.width, raw.height))
      pipeline = pipeline.resize({ width: side, height: side, fit: 'inside' });
    const encoded =
      format === 'jpeg'
        ? pipeline.jpeg({ quality })
        : format === 'webp'
          ? pipeline.webp({ quality })
          : pipeline.png({ compressionLevel: 9 });
    let out: { data: Buffer; info: OutputInfo };
    try {
      out = await encoded.toBuffer({ resolveWithObject: true });
    } catch (err) {
      throw unreadable(err, decode);
    }
    if (out.data.length <= limits.maxBytes) {
      return {
        data: out.data,
        mime: `image/${format}`,
        width: out.info.width,
        height: out.info.height,
        downscaled: true,
      };
    }
    if (format !== 'png' && quality > 70) {
      quality = 70;
      continue;
    }
    // Encoded size grows roughly with the pixel count, i.e. with the square of the side.
    side = Math.floor(side * Math.min(0.9, Math.sqrt(limits.maxBytes / out.data.length) * 0.95));
  }
  throw new SluiceError('too_large', 'the image could not be reduced to the size limits');
}
