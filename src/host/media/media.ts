import { createHash } from 'node:crypto';
import { type FileHandle, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { SluiceError } from '../../core/errors.js';
import { diskFullAsUnavailable } from '../../core/store-faults.js';
import { requireWellFormed, sliceWhole } from '../../core/text.js';
import { isActiveMember } from '../../store/ops/channels.js';
import {
  channelsReferencingMedia,
  deleteUnlinkedUploads,
  findMedia,
  insertMedia,
  type MediaRow,
} from '../../store/ops/media.js';
import { type HostContext, newId, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';

export type Media = MediaRow;

/**
 * A display name safe to show and to materialise: the last path segment, no control or invisible
 * format characters, no leading dots, at most 200 UTF-16 units (never half a surrogate pair).
 * Never trusted as a path.
 */
export function sanitizeFileName(name: unknown): string {
  const raw = typeof name === 'string' ? name : '';
  const last = raw.split(/[/\\]/).pop() ?? '';
  const cleaned = sliceWhole(
    last
      // Controls, and the invisible format characters (bidi overrides such as U+202E, zero-width
      // marks, BOM) that make `invoice\u202Egpj.exe` display as `invoiceexe.jpg`.
      .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, '')
      .replace(/^\.+/, '')
      .trim(),
    200,
  );
  return cleaned === '' ? 'file' : cleaned;
}

/** An upload's stored name: refused unless well-formed Unicode (stored exactly or refused), then sanitised. */
function uploadName(name: unknown): string {
  requireWellFormed('name', name);
  return sanitizeFileName(name);
}

/** MIME type from the bytes themselves (never from the name or a client header). */
export async function sniffMime(bytes: Uint8Array): Promise<string> {
  const { fileTypeFromBuffer } = await import('file-type');
  const detected = await fileTypeFromBuffer(bytes);
  if (detected) return detected.mime;
  return looksLikeText(bytes) ? 'text/plain' : 'application/octet-stream';
}

function looksLikeText(bytes: Uint8Array, cut = false): boolean {
  const sample = bytes.subarray(0, HEAD_BYTES);
  if (sample.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(
      cut || sample.length < bytes.length ? trimPartial(sample) : sample,
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
    name: uploadName(name),
    mime,
    size: bytes.length,
    created_at: nowIso(ctx),
    created_by: actor.id,
  };
  // Bytes first: a metadata row never points at a blob that is not there.
  try {
    await ctx.store.blobs.put(sha256, bytes);
  } catch (err) {
    throw diskFullAsUnavailable(err, 'the attachment');
  }
  await insertMedia(ctx.store.db, row);
  return { attachment_id: row.id, name: row.name, mime: row.mime, size: row.size };
}

/** Bytes kept from the start of an upload for text detection (file-type reads the file itself). */
const HEAD_BYTES = 4096;

/** Where uploads are written while they arrive: inside the home, private to its owner. */
export function uploadTempDir(ctx: HostContext): string {
  return join(ctx.home, 'tmp');
}

/**
 * Stores an upload as it arrives: written to a private temp file in the home while hashed
 * (SHA-256) and counted, refused with `too_large` the moment it passes the limit, MIME sniffed
 * from its first bytes, then moved into the content-addressed store. The temp file is created
 * only when the first byte has arrived, so an upload dropped before it (or an empty one) never
 * touches the disk; a refused, failed or aborted upload removes its file before this returns.
 * A full disk is `unavailable` (disk full). Memory stays at one chunk whatever the size.
 */
export async function putMediaStream(
  ctx: HostContext,
  actor: Principal,
  source: AsyncIterable<Uint8Array>,
  name: unknown,
): Promise<{ attachment_id: string; name: string; mime: string; size: number }> {
  const storedName = uploadName(name); // refused before a byte is read
  const cap = ctx.limits.maxUploadBytes;
  let temp: string | undefined;
  let file: FileHandle | undefined;
  let moved = false;
  try {
    const hash = createHash('sha256');
    const head: Buffer[] = [];
    let headBytes = 0;
    let size = 0;
    for await (const chunk of source) {
      if (chunk.byteLength === 0) continue;
      size += chunk.byteLength;
      if (size > cap) throw new SluiceError('too_large', `upload is over the ${cap}-byte limit`);
      hash.update(chunk);
      if (headBytes < HEAD_BYTES) {
        const part = Buffer.from(chunk.subarray(0, HEAD_BYTES - headBytes));
        head.push(part);
        headBytes += part.length;
      }
      if (!file) {
        const dir = uploadTempDir(ctx);
        await mkdir(dir, { recursive: true, mode: 0o700 });
        temp = join(dir, `upload-${Buffer.from(ctx.random(12)).toString('hex')}${UPLOAD_TEMP_SUFFIX}`);
        file = await open(temp, 'wx', 0o600);
      }
      await file.write(chunk);
    }
    if (!file || temp === undefined) throw new SluiceError('invalid_params', 'the upload is empty');
    await file.close();
    const sha256 = hash.digest('hex');
    const mime = await sniffFileMime(temp, Buffer.concat(head), size);
    const row: Media = {
      id: newId(ctx, 'a'),
      sha256,
      name: storedName,
      mime,
      size,
      created_at: nowIso(ctx),
      created_by: actor.id,
    };
    // Bytes first: a metadata row never points at a blob that is not there.
    moved = true;
    await ctx.store.blobs.putFile(sha256, temp);
    await insertMedia(ctx.store.db, row);
    return { attachment_id: row.id, name: row.name, mime: row.mime, size: row.size };
  } catch (err) {
    throw diskFullAsUnavailable(err, 'the upload');
  } finally {
    await file?.close().catch(() => {});
    if (!moved && temp !== undefined) await rm(temp, { force: true });
  }
}

/** Temp uploads end in this; nothing else in the temp folder does. */
export const UPLOAD_TEMP_SUFFIX = '.part';

/**
 * Removes temp uploads in the home untouched for `olderThanMs` (left by a process killed mid-upload:
 * a live upload writes its file at least once per socket idle timeout or is dropped). Returns the
 * names removed. A missing folder is nothing to sweep.
 */
export async function sweepUploadTemp(
  ctx: HostContext,
  olderThanMs: number,
  now = Date.now(),
): Promise<string[]> {
  const dir = uploadTempDir(ctx);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.endsWith(UPLOAD_TEMP_SUFFIX)) continue;
    try {
      const info = await stat(join(dir, name));
      if (now - info.mtimeMs < olderThanMs) continue;
      await rm(join(dir, name), { force: true });
      removed.push(name);
    } catch {
      // Gone meanwhile (its upload ended): nothing to do.
    }
  }
  return removed;
}

/** MIME type of a file from its own bytes: file-type reads what it needs, else text or binary. */
async function sniffFileMime(path: string, head: Uint8Array, size: number): Promise<string> {
  const { fileTypeFromFile } = await import('file-type');
  const detected = await fileTypeFromFile(path);
  if (detected) return detected.mime;
  return looksLikeText(head, size > head.length) ? 'text/plain' : 'application/octet-stream';
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

/**
 * A readable attachment's bytes as a stream (a bounded slice at a time), the whole or one
 * inclusive range; the caller has already resolved the range against `media.size`.
 */
export async function openMediaStream(
  ctx: HostContext,
  actor: Principal,
  mediaId: string,
): Promise<{ media: Media; open: (range?: { start: number; end: number }) => Promise<Readable> }> {
  const media = await getReadableMedia(ctx, actor, mediaId);
  return {
    media,
    async open(range) {
      const stream = await ctx.store.blobs.openRead(media.sha256, range);
      if (!stream) throw new SluiceError('not_found', 'the attachment bytes are missing');
      return stream;
    },
  };
}

/**
 * Forgets uploads made for a send that was then refused, so they cannot be attached later as if
 * that send had kept them: the actor's rows among `ids` that no message links are deleted. The
 * bytes are left to `media gc` (unreferenced; another upload of the same bytes may share them).
 */
export async function forgetUploads(
  ctx: HostContext,
  actor: Principal,
  ids: readonly string[],
): Promise<void> {
  await ctx.store.transaction((trx) => deleteUnlinkedUploads(trx, ids, actor.id));
}
