import { createHash } from 'node:crypto';
import { SluiceError } from '../core/errors.js';
import { isActiveMember } from '../store/ops/channels.js';
import { channelsReferencingMedia, findMedia, insertMedia, type MediaRow } from '../store/ops/media.js';
import { type HostContext, newId, nowIso } from './context.js';
import type { Principal } from './principals.js';

export type Media = MediaRow;

/**
 * A display name safe to show and to materialise: the last path segment, no control characters,
 * no leading dots, at most 200 characters. Never trusted as a path.
 */
export function sanitizeFileName(name: unknown): string {
  const raw = typeof name === 'string' ? name : '';
  const last = raw.split(/[/\\]/).pop() ?? '';
  const cleaned = last
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .replace(/^\.+/, '')
    .trim()
    .slice(0, 200);
  return cleaned === '' ? 'file' : cleaned;
}

/** MIME type from the bytes themselves (never from the name or a client header). */
export async function sniffMime(bytes: Uint8Array): Promise<string> {
  const { fileTypeFromBuffer } = await import('file-type');
  const detected = await fileTypeFromBuffer(bytes);
  if (detected) return detected.mime;
  return looksLikeText(bytes) ? 'text/plain' : 'application/octet-stream';
}

function looksLikeText(bytes: Uint8Array): boolean {
  const sample = bytes.subarray(0, 4096);
  if (sample.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(
      sample.length < bytes.length ? trimPartial(sample) : sample,
    );
    return true;
  } catch {
    return false;
  }
}

// A sample cut mid-character is still text: drop up to 3 trailing continuation bytes.
function trimPartial(sample: Uint8Array): Uint8Array {
  let end = sample.length;
  for (let i = 0; i < 3 && end > 0 && ((sample[end - 1] as number) & 0xc0) === 0x80; i++) end--;
  if (end > 0 && ((sample[end - 1] as number) & 0xc0) === 0xc0) end--;
  return sample.subarray(0, end);
}

/** Stores uploaded bytes (content-addressed) and their metadata; returns the attachment reference. */
export async function putMedia(
  ctx: HostContext,
  actor: Principal,
  bytes: Uint8Array,
  name: unknown,
): Promise<{ attachment_id: string; name: string; mime: string; size: number }> {
  if (bytes.length === 0) throw new SluiceError('invalid_params', 'the upload is empty');
  if (bytes.length > ctx.limits.maxUploadBytes) {
    throw new SluiceError(
      'too_large',
      `upload is ${bytes.length} bytes; the limit is ${ctx.limits.maxUploadBytes}`,
    );
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const mime = await sniffMime(bytes);
  const row: Media = {
    id: newId(ctx, 'a'),
    sha256,
    name: sanitizeFileName(name),
    mime,
    size: bytes.length,
    created_at: nowIso(ctx),
    created_by: actor.id,
  };
  // Bytes first: a metadata row never points at a blob that is not there.
  await ctx.store.blobs.put(sha256, bytes);
  await insertMedia(ctx.store.db, row);
  return { attachment_id: row.id, name: row.name, mime: row.mime, size: row.size };
}

/**
 * Media the actor may read: the uploader, or a current member of a channel with a message that
 * references it. Anything else is `not_found` (no probing for ids).
 */
export async function getReadableMedia(ctx: HostContext, actor: Principal, mediaId: string): Promise<Media> {
  const row = typeof mediaId === 'string' ? await findMedia(ctx.store.db, mediaId) : undefined;
  if (!row) throw new SluiceError('not_found', 'no such attachment');
  if (row.created_by === actor.id) return row;
  for (const channelId of await channelsReferencingMedia(ctx.store.db, row.id)) {
    if (await isActiveMember(ctx.store.db, channelId, actor.id)) return row;
  }
  throw new SluiceError('not_found', 'no such attachment');
}

export async function readMediaBytes(
  ctx: HostContext,
  actor: Principal,
  mediaId: string,
): Promise<{ media: Media; bytes: Uint8Array }> {
  const media = await getReadableMedia(ctx, actor, mediaId);
  const bytes = await ctx.store.blobs.get(media.sha256);
  if (!bytes) throw new SluiceError('not_found', 'the attachment bytes are missing');
  return { media, bytes };
}
