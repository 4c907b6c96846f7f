import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import { referencedBlobShas } from '../../store/ops/media.js';
import { forgetUnreferencedUploads, newestUploadBySha } from '../../store/ops/media-gc.js';
import type { HostContext } from '../identity/context.js';
import { materializedRoot } from './materialize.js';

/** What a collection freed (or, with `dryRun`, would free). */
export interface MediaGcReport {
  dryRun: boolean;
  /** Blobs no message references and older than the threshold (their upload rows go too). */
  blobs: { count: number; bytes: number; sha256: string[] };
  /** Materialised copies whose blob is gone or that were not used within the threshold. */
  materialized: { count: number; bytes: number };
}

export interface MediaGcOptions {
  /** Keep unreferenced uploads and copies younger than this: they may be about to be attached. */
  olderThanMs: number;
  dryRun?: boolean;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: DAY_MS, w: 7 * DAY_MS };

/** Parses `30d`, `12h`, `90m`, `45s`, `2w` (or `0`) into milliseconds; anything else is refused. */
export function parseAge(text: string): number {
  const match = /^(\d{1,6})([smhdw]?)$/.exec(text.trim());
  if (!match)
    throw new SluiceError(
      'invalid_params',
      `--older-than must look like 30d, 12h, 90m or 45s, not ${quoteInput(text, 40)}`,
    );
  const n = Number(match[1]);
  if (n !== 0 && match[2] === '')
    throw new SluiceError('invalid_params', '--older-than needs a unit: s, m, h, d or w');
  return n * (UNIT_MS[match[2] || 's'] ?? 1000);
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Removes blobs that no message references and that are older than the threshold (by the blob's
 * time and the newest upload of the same bytes), with their upload rows, then materialised copies
 * that are stale. A blob any message references is never touched: the reference is checked
 * again inside the transaction that deletes its upload rows, before the bytes go.
 */
export async function collectMediaGarbage(ctx: HostContext, options: MediaGcOptions): Promise<MediaGcReport> {
  if (!Number.isFinite(options.olderThanMs) || options.olderThanMs < 0) {
    throw new SluiceError('invalid_params', 'the age threshold must be zero or more');
  }
  const dryRun = options.dryRun === true;
  const cutoff = ctx.now().getTime() - options.olderThanMs;
  const report: MediaGcReport = {
    dryRun,
    blobs: { count: 0, bytes: 0, sha256: [] },
    materialized: { count: 0, bytes: 0 },
  };
  const referenced = await referencedBlobShas(ctx.store.db);
  const newestUpload = await newestUploadBySha(ctx.store.db);
  const gone = new Set<string>();
  for (const blob of await ctx.store.blobs.list()) {
    if (referenced.has(blob.sha256)) continue;
    const uploaded = newestUpload.get(blob.sha256);
    const youngest = Math.max(blob.mtimeMs, uploaded ?? Number.NEGATIVE_INFINITY);
    if (youngest > cutoff) continue;
    // A send that raced the collection keeps the bytes: the check and the delete share a transaction.
    if (!dryRun && !(await ctx.store.transaction((trx) => forgetUnreferencedUploads(trx, blob.sha256))))
      continue;
    if (!dryRun) await ctx.store.blobs.delete(blob.sha256);
    gone.add(blob.sha256);
    report.blobs.count += 1;
    report.blobs.bytes += blob.size;
    report.blobs.sha256.push(blob.sha256);
  }
  await sweepMaterialized(ctx, { cutoff, dryRun, gone, report });
  return report;
}

/**
 * Materialised copies are a cache: a folder goes when its blob was just collected, or when
 * nothing used it within the threshold (materialising again recreates it on demand; a reuse
 * refreshes its mtime). Only folders named by a digest are considered.
 */
async function sweepMaterialized(
  ctx: HostContext,
  args: { cutoff: number; dryRun: boolean; gone: Set<string>; report: MediaGcReport },
): Promise<void> {
  const root = materializedRoot(ctx.home);
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return;
  }
  for (const name of names) {
    if (!SHA256_HEX.test(name)) continue;
    const dir = join(root, name);
    const { bytes, newestMs } = await folderUsage(dir);
    if (!args.gone.has(name) && newestMs > args.cutoff) continue;
    if (!args.dryRun) await rm(dir, { recursive: true, force: true });
    args.report.materialized.count += 1;
    args.report.materialized.bytes += bytes;
  }
}

async function folderUsage(dir: string): Promise<{ bytes: number; newestMs: number }> {
  let bytes = 0;
  let newestMs = 0;
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return { bytes, newestMs };
  }
  for (const entry of entries) {
    try {
      const info = await stat(join(dir, entry));
      bytes += info.size;
      newestMs = Math.max(newestMs, info.mtimeMs);
    } catch {
      // removed meanwhile
    }
  }
  return { bytes, newestMs };
}
