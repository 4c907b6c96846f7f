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
 * The image as is when it is within the limits, else a downscaled copy: the long side scaled to
 * the pixel cap, then quality and size lowered step by step until the base64 fits. JPEG and WebP
 * keep their format; PNG stays PNG (lossless, smaller each step); GIF is re-encoded as PNG
 * (first frame). Deterministic for the same input.
 */
export async function fitImage(
  bytes: Uint8Array,
  mime: string,
  limits: { maxBase64Bytes: number; maxSidePx: number } = CLAUDE_IMAGE_LIMITS,
): Promise<FittedImage> {
  const meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  const longSide = Math.max(width, height);
  if (base64Length(bytes.length) <= limits.maxBase64Bytes && longSide <= limits.maxSidePx) {
    return { bytes, mime, downscaled: false };
  }
  const format: 'jpeg' | 'png' | 'webp' =
    mime === 'image/jpeg' ? 'jpeg' : mime === 'image/webp' ? 'webp' : 'png';
  let scale = longSide > limits.maxSidePx ? limits.maxSidePx / longSide : 1;
  for (let attempt = 0; attempt < 40; attempt++) {
    const qualities = format === 'png' ? [100] : [85, 70, 55];
    for (const quality of qualities) {
      const out = await encode(bytes, format, Math.max(1, Math.floor(longSide * scale)), quality);
      if (base64Length(out.length) <= limits.maxBase64Bytes) {
        return { bytes: new Uint8Array(out), mime: `image/${format}`, downscaled: true };
      }
    }
    scale *= 0.75;
  }
  throw new SluiceError('too_large', 'the image could not be reduced to the provider limits');
}

async function encode(
  bytes: Uint8Array,
  format: 'jpeg' | 'png' | 'webp',
  side: number,
  quality: number,
): Promise<Buffer> {
  const pipeline = sharp(bytes, { limitInputPixels: false })
    .rotate()
    .resize({ width: side, height: side, fit: 'inside', withoutEnlargement: true });
  if (format === 'jpeg') return pipeline.jpeg({ quality, mozjpeg: true }).toBuffer();
  if (format === 'webp') return pipeline.webp({ quality }).toBuffer();
  return pipeline.png({ compressionLevel: 9 }).toBuffer();
}
