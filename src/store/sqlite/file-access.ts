import { accessSync, constants } from 'node:fs';
import { dirname, parse, resolve, sep } from 'node:path';
import type { SluiceError } from '../../core/errors.js';
import { isPermissionCode, permissionError } from '../../core/store-faults.js';

/**
 * SQLite says only "unable to open database file" or "attempt to write a readonly database" when
 * the file system refuses the user; this module finds the path it refused (a folder on the way
 * that cannot be entered, the database's folder, the file, its -wal or -shm) so that the line can
 * name it and say it is a permission problem (core/store-faults.ts permissionError).
 */

/** SQLite's codes for a file it could not open or write; DBMOVED is a file gone, not a refusal. */
function isOpenOrWriteRefusal(code: string): boolean {
  return (
    code.startsWith('SQLITE_CANTOPEN') ||
    (code.startsWith('SQLITE_READONLY') && code !== 'SQLITE_READONLY_DBMOVED') ||
    code === 'SQLITE_PERM'
  );
}

/** The permission code `path` is refused `mode` with, or undefined (allowed, or absent). */
function refusal(path: string, mode: number): string | undefined {
  try {
    accessSync(path, mode);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return isPermissionCode(code) ? code : undefined;
  }
}

/** The first folder from the root down to `folder` that this user may not enter. */
function firstUnenterable(folder: string): { path: string; code: string } | undefined {
  const { root } = parse(folder);
  let path = root;
  for (const part of folder.slice(root.length).split(sep).filter(Boolean)) {
    path = path === root ? `${root}${part}` : `${path}${sep}${part}`;
    const code = refusal(path, constants.X_OK);
    if (code !== undefined) return { path, code };
  }
  return undefined;
}

/**
 * The permission error naming the path the file system refused when `err` is SQLite failing to
 * open or write the database at `file`; undefined for any other error, or when no path is refused
 * (the caller maps the error as before).
 */
export function sqliteAccessFault(err: unknown, file: string): SluiceError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !isOpenOrWriteRefusal(code) || file === '' || file === ':memory:')
    return undefined;
  const path = resolve(file);
  const folder = dirname(path);
  const unenterable = firstUnenterable(folder);
  if (unenterable) return permissionError('open', unenterable.path, unenterable.code);
  const readWrite = constants.R_OK | constants.W_OK;
  // The file, then its folder (where SQLite makes the -wal and -shm), then those two.
  const checks: [string, number][] = [
    [path, readWrite],
    [folder, constants.W_OK],
    [`${path}-wal`, readWrite],
    [`${path}-shm`, readWrite],
  ];
  for (const [target, mode] of checks) {
    const refused = refusal(target, mode);
    if (refused !== undefined) return permissionError('write', target, refused);
  }
  return undefined;
}
