import { chmod, mkdir, rename, stat, utimes, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import sharp from 'sharp';
import { SluiceError } from '../core/errors.js';
import type { HostContext } from './context.js';
import { getReadableMedia, type Media, sanitizeFileName } from './media.js';
import type { Principal } from './principals.js';

/** Folder under the home that holds materialised copies: `<home>/materialized/<sha256>/<name>`. */
export function materializedRoot(home: string): string {
  return join(home, 'materialized');
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Where a blob's copy lives. The name is sanitised (last segment, no control characters, no
 * leading dots) and the result is checked to stay inside the digest's folder, so a user-supplied
 * name can never point anywhere else.
 */
export function materializedPath(home: string, sha256: string, name: string): string {
  if (!SHA256_HEX.test(sha256)) throw new SluiceError('invalid_params', 'not a sha256 digest');
  const dir = resolve(materializedRoot(home), sha256);
  const path = resolve(dir, sanitizeFileName(name));
  const rel = relative(dir, path);
  if (rel === '' || rel.startsWith('..') || rel.includes(sep)) {
    throw new SluiceError('invalid_params', 'attachment name does not name a file');
  }
  return path;
}

/**
 * Writes the blob's bytes to its materialised path unless a complete copy is already there.
 * Folders are 0700 and files 0600: readable only by the user the agent runs as. A reused copy
 * gets a fresh mtime, so `media gc` sees it as in use.
 */
export async function materializeMedia(
  ctx: HostContext,
  media: Pick<Media, 'sha256' | 'name' | 'size'>,
): Promise<string> {
  const path = materializedPath(ctx.home, media.sha256, media.name);
  const root = materializedRoot(ctx.home);
  const dir = resolve(root, media.sha256);
  await mkdir(root, { recursive: true, mode: 0o700 });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode is filtered by the umask and ignored for folders that already exist.
  await chmod(root, 0o700);
  await chmod(dir, 0o700);
  try {
    const info = await stat(path);
    if (info.isFile() && info.size === media.size) {
      const now = new Date();
      await utimes(path, now, now);
      return path;
    }
  } catch {
    // absent: write it below
  }
  const bytes = await ctx.store.blobs.get(media.sha256);
  if (!bytes) throw new SluiceError('not_found', 'the attachment bytes are missing');
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(temp, bytes, { mode: 0o600 });
  await chmod(temp, 0o600);
  await rename(temp, path);
  return path;
}

/**
 * Materialises an attachment for an agent after checking it may read it (I6: current
 * membership of a channel whose message references it). Returns the local path.
 */
export async function materializeAttachment(
  ctx: HostContext,
  agent: Principal,
  attachmentId: string,
): Promise<string> {
  const media = await getReadableMedia(ctx, agent, attachmentId);
  return materializeMedia(ctx, media);
}

/** Image formats Claude takes inline. */
export const CLAUDE_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
]);

/**
 * Provider limits for an inline image. The API measures the base64 text (5 MiB), so the decoded
 * bytes may be at most three quarters of that; the long side at most 8000 px.
 */
export const CLAUDE_IMAGE_LIMITS = Object.freeze({ maxBase64Bytes: 5 * 1024 * 1024, maxSidePx: 8000 });

export interface FittedImage {
  bytes: Uint8Array;
  mime: string;
  /** True when the bytes are a re-encoded, downscaled copy. */
  downscaled: boolean;
}

function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

/**
 * The image as is when it is within the limits, else a downscaled copy. The source is decoded
 * once, capped to the pixel limit, then re-encoded: first at a lower quality, then smaller, each
 * step sized from how far the last one overshot, until the base64 fits. JPEG and WebP keep their
 * format; PNG stays PNG (lossless); GIF becomes PNG (first frame). Deterministic for one input.
 */
export async function fitImage(
  bytes: Uint8Array,
  mime: string,
  limits: { maxBase64Bytes: number; maxSidePx: number } = CLAUDE_IMAGE_LIMITS,
): Promise<FittedImage> {
  let meta: sharp.Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw new SluiceError('invalid_params', 'the attachment is not a readable image');
  }
  const longSide = Math.max(meta.width ?? 0, meta.height ?? 0);
  if (base64Length(bytes.length) <= limits.maxBase64Bytes && longSide <= limits.maxSidePx) {
    return { bytes, mime, downscaled: false };
  }
  const format: 'jpeg' | 'png' | 'webp' =
    mime === 'image/jpeg' ? 'jpeg' : mime === 'image/webp' ? 'webp' : 'png';
  const cap = Math.min(longSide, limits.maxSidePx);
  // Decode (and orient) once; every attempt below resizes these pixels, not the source file.
  const decoded = await sharp(bytes, { limitInputPixels: false })
    .rotate()
    .resize({ width: cap, height: cap, fit: 'inside', withoutEnlargement: true })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const { width, height, channels } = decoded.info;
  let side = Math.max(width, height);
  let quality = format === 'png' ? 100 : 85;
  for (let attempt = 0; attempt < 12 && side >= 1; attempt++) {
    let pipeline = sharp(decoded.data, { raw: { width, height, channels } });
    if (side < Math.max(width, height))
      pipeline = pipeline.resize({ width: side, height: side, fit: 'inside' });
    const out =
      format === 'jpeg'
        ? await pipeline.jpeg({ quality }).toBuffer()
        : format === 'webp'
          ? await pipeline.webp({ quality }).toBuffer()
          : await pipeline.png({ compressionLevel: 9 }).toBuffer();
    const size = base64Length(out.length);
    if (size <= limits.maxBase64Bytes)
      return { bytes: new Uint8Array(out), mime: `image/${format}`, downscaled: true };
    if (format !== 'png' && quality > 70) {
      quality = 70;
      continue;
    }
    // Encoded size grows roughly with the pixel count, i.e. with the square of the side.
    side = Math.floor(side * Math.min(0.9, Math.sqrt(limits.maxBase64Bytes / size) * 0.95));
  }
  throw new SluiceError('too_large', 'the image could not be reduced to the provider limits');
}
