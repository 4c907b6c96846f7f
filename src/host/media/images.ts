import { SluiceError } from '../../core/errors.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { DEFAULT_IMAGE_LIMITS, type FittedImage, fitImage, type ImageLimits } from './image-fit.js';
import { materializeMedia } from './materialize.js';
import { getReadableMedia } from './media.js';

// The limits and the fitting live in image-fit.ts (one fitImage for MCP and drivers); these
// names stay importable from here for the MCP surface.
export { DEFAULT_IMAGE_LIMITS, type FittedImage, type ImageLimits } from './image-fit.js';

/** Image bytes and what the model is told about them. */
export interface ImageRead {
  attachment_id: string;
  name: string;
  image: FittedImage;
}

/**
 * An attachment the caller may see, as an image within `limits`. Anything else is refused with a
 * pointer to the file: its materialised local copy, so a model with a shell can open it. An image
 * that does not decode within the pixel and time limits is refused in one line (`fitImage`).
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
