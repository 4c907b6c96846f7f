import sharp from 'sharp';
import { SluiceError } from '../core/errors.js';
import type { HostContext } from './context.js';
import { materializeMedia } from './materialize.js';
import { getReadableMedia } from './media.js';
import type { Principal } from './principals.js';

/** What providers accept as inline images (Claude, OpenAI). */
export const INLINE_IMAGE_MIMES: readonly string[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/** Image limits: decoded bytes and the long side in pixels (DESIGN.md §3.1, §6). */
export interface ImageLimits {
  maxBytes: number;
  maxSide: number;
}

export const DEFAULT_IMAGE_LIMITS: ImageLimits = { maxBytes: 5 * 1024 * 1024, maxSide: 8000 };

/** An image ready to hand to a model, and how it was made to fit. */
export interface FittedImage {
  data: Buffer;
  mime: string;
  width: number;
  height: number;
  /** True when the bytes were re-encoded smaller than the stored original. */
  downscaled: boolean;
}

const MAX_ATTEMPTS = 8;

/**
 * Returns the image as is when it already fits, else downscaled (and re-encoded) until it is at
 * most `maxBytes` and its long side at most `maxSide`. GIFs and PNGs that stay too big as PNG are
 * re-encoded as JPEG, which is what shrinks photographs.
 */
export async function fitImage(
  bytes: Uint8Array,
  mime: string,
  limits: ImageLimits = DEFAULT_IMAGE_LIMITS,
): Promise<FittedImage> {
  let width: number;
  let height: number;
  try {
    const meta = await sharp(bytes).metadata();
    width = meta.width ?? 0;
    height = meta.height ?? 0;
  } catch {
    throw new SluiceError('invalid_params', 'the attachment is not a readable image');
  }
  if (width === 0 || height === 0)
    throw new SluiceError('invalid_params', 'the attachment is not a readable image');
  if (
    bytes.length <= limits.maxBytes &&
    Math.max(width, height) <= limits.maxSide &&
    INLINE_IMAGE_MIMES.includes(mime)
  ) {
    return { data: Buffer.from(bytes), mime, width, height, downscaled: false };
  }
  let format: 'jpeg' | 'png' | 'webp' =
    mime === 'image/jpeg' ? 'jpeg' : mime === 'image/webp' ? 'webp' : 'png';
  let scale = Math.min(1, limits.maxSide / Math.max(width, height));
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const targetWidth = Math.max(1, Math.floor(width * scale));
    const targetHeight = Math.max(1, Math.floor(height * scale));
    let pipeline = sharp(bytes).resize(targetWidth, targetHeight, { fit: 'inside' });
    if (format === 'jpeg') pipeline = pipeline.flatten({ background: '#ffffff' }).jpeg({ quality: 85 });
    else if (format === 'webp') pipeline = pipeline.webp({ quality: 85 });
    else pipeline = pipeline.png({ compressionLevel: 9 });
    const { data, info } = await pipeline.toBuffer({ resolveWithObject: true });
    if (data.length <= limits.maxBytes && Math.max(info.width, info.height) <= limits.maxSide) {
      return { data, mime: `image/${format}`, width: info.width, height: info.height, downscaled: true };
    }
    if (format === 'png' && attempt >= 1) format = 'jpeg';
    scale *= Math.min(0.9, Math.sqrt(limits.maxBytes / data.length) * 0.9);
  }
  throw new SluiceError('too_large', 'the image could not be made small enough');
}

/** Image bytes and what the model is told about them. */
export interface ImageRead {
  attachment_id: string;
  name: string;
  image: FittedImage;
}

/**
 * An attachment the caller may see, as an image within `limits`. Anything else is refused with a
 * pointer to the file: its materialised local copy, so a model with a shell can open it.
 */
export async function readImageAttachment(
  ctx: HostContext,
  actor: Principal,
  attachmentId: string,
  limits: ImageLimits = DEFAULT_IMAGE_LIMITS,
): Promise<ImageRead> {
  const media = await getReadableMedia(ctx, actor, attachmentId);
  if (!media.mime.startsWith('image/') || media.mime === 'image/svg+xml') {
    // The same copy drivers make (`<home>/materialized/<sha256>/<name>`), which `media gc` tends.
    const path = await materializeMedia(ctx, media);
    throw new SluiceError(
      'invalid_params',
      `attachment ${media.id} (${media.name}) is ${media.mime}, not an image; its bytes are at ${path}`,
    );
  }
  const bytes = await ctx.store.blobs.get(media.sha256);
  if (!bytes) throw new SluiceError('not_found', 'the attachment bytes are missing');
  return { attachment_id: media.id, name: media.name, image: await fitImage(bytes, media.mime, limits) };
}
