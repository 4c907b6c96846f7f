import { chmod, mkdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import type { AttachmentCopy } from '../../core/envelope.js';
import { SluiceError } from '../../core/errors.js';
import { diskFullAsUnavailable } from '../../core/store-faults.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { getReadableMedia, type Media, sanitizeFileName } from './media.js';

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
  try {
    await writeFile(temp, bytes, { mode: 0o600 });
    await chmod(temp, 0o600);
    await rename(temp, path);
  } catch (err) {
    // A failed write (a full disk) leaves a partial copy that no reader and no `media gc` sees.
    await rm(temp, { force: true });
    throw diskFullAsUnavailable(err, 'the attachment copy');
  }
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

/** The one line an envelope carries for an attachment whose copy could not be made. */
function copyFailure(err: unknown): string {
  if (err instanceof SluiceError) return err.message;
  const code = (err as { code?: unknown } | null)?.code;
  return `the local copy could not be written${typeof code === 'string' ? ` (${code})` : ''}`;
}

/**
 * Materialises attachments for a delivery, best effort: one that cannot be copied (a full disk, a
 * blob gone) is delivered without a path but with the reason, so the model knows why, and
 * `onFailure` gets the same line for the operator; the delivery itself goes on.
 */
export function attachmentCopies(
  ctx: HostContext,
  agent: Principal,
  onFailure: (line: string) => void = () => {},
): (attachment: { attachment_id: string; name: string }) => Promise<AttachmentCopy> {
  return async (a) => {
    try {
      return { path: await materializeAttachment(ctx, agent, a.attachment_id) };
    } catch (err) {
      const pathError = copyFailure(err);
      onFailure(`attachment ${a.attachment_id} (${a.name}) has no local copy: ${pathError}`);
      return { pathError };
    }
  };
}
