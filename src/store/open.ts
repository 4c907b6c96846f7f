import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { SluiceError } from '../core/errors.js';
import { isPermissionCode, permissionError } from '../core/store-faults.js';
import { quoteInput } from '../core/text.js';
import { openSqliteStore } from './sqlite/connect.js';
import type { Durability, Store } from './store.js';

export interface OpenStoreOptions {
  /** The Sluice home folder (blobs, default database file). */
  home: string;
  /** `postgres://…` for PostgreSQL; a file path or empty for the SQLite file in the home. */
  url?: string | undefined;
  durability?: Durability;
  /** Poll interval for cross-process change detection on SQLite. */
  pollMs?: number;
}

/** True when `url` names a PostgreSQL database. */
export function isPostgresUrl(url: string | undefined): boolean {
  return url !== undefined && /^postgres(ql)?:\/\//.test(url);
}

/**
 * Codes that say the path itself cannot be a folder: a file in the way, a name too long, a loop,
 * a parent that refuses children (ENOENT under /proc).
 */
const NOT_A_FOLDER_PATH = new Set(['EEXIST', 'ENOTDIR', 'ENAMETOOLONG', 'ELOOP', 'EINVAL', 'ENOENT']);

/** mkdir of one level; a folder another process made meanwhile is as good (mkdir -p's rule). */
function makeOneFolder(path: string): void {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST' && statSync(path).isDirectory()) return;
    throw err;
  }
}

/**
 * Makes `folder` and each missing parent, one level at a time, private to the user (0700). Not
 * `mkdir -p`: Node's recursive mkdir never returns where a parent exists but refuses children
 * with ENOENT (procfs: `--home /proc/1/x` hung). A path that cannot be a folder is
 * `invalid_params`; a file system that refuses (permissions, read-only, full) is `unavailable`
 * (`cannot create the home /x (permission denied)` for the first two).
 * Either way one line naming the folder and the cause, never an internal error.
 */
export function makePrivateFolder(folder: string, what: string): void {
  const missing: string[] = [];
  for (let at = resolve(folder); !existsSync(at); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  const path = quoteInput(folder, 200);
  let code: string | undefined;
  try {
    for (const at of missing) makeOneFolder(at);
    // Already there: it must be a folder (a file in the way is EEXIST, as mkdir would say).
    if (!statSync(folder).isDirectory()) code = 'EEXIST';
  } catch (err) {
    code = (err as NodeJS.ErrnoException).code;
    if (code === undefined) throw err;
  }
  if (code !== undefined) {
    if (isPermissionCode(code)) throw permissionError(`create ${what}`, folder, code);
    if (NOT_A_FOLDER_PATH.has(code))
      throw new SluiceError(
        'invalid_params',
        `${what} ${path} is not a folder Sluice can make (${code}); check the path`,
      );
    throw new SluiceError('unavailable', `${what} ${path} cannot be made (${code})`);
  }
}

/** Opens the store the options name, running migrations first. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  makePrivateFolder(options.home, 'the home');
  if (isPostgresUrl(options.url)) {
    const { openPostgresStore } = await import('./postgres/connect.js');
    return openPostgresStore({ url: options.url as string });
  }
  const path = options.url && options.url !== '' ? options.url : join(options.home, 'sluice.db');
  return openSqliteStore({
    path,
    blobDir: join(options.home, 'blobs'),
    durability: options.durability ?? 'full',
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
  });
}
