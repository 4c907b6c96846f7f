import { SluiceError } from './errors.js';

/**
 * Faults outside the process that reach us as a driver's or the file system's error: a full disk,
 * an I/O error, a database file or schema that went away, a database server that dropped the
 * connection, a file or folder the file system will not let this user write. Each is weather, not a bug: the request fails with `unavailable` and one line naming
 * the cause (the caller may retry once the fault clears), never `internal`.
 */

/** SQLite's code when the `-shm` file beside a WAL database cannot grow. */
const SHM_FULL = 'SQLITE_IOERR_SHMSIZE';

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function messageOf(err: unknown): string {
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(err);
}

/**
 * Codes that mean no space is left: the file system, a quota, SQLite, PostgreSQL (53100).
 * SQLITE_IOERR_SHMSIZE is SQLite failing to grow a WAL database's `-shm` file, which it must do
 * to open the database at all: on a full disk even a read-only command meets it.
 */
const DISK_FULL = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL', SHM_FULL, '53100']);

/** True when `err` says the disk (or the quota) is full. */
export function isDiskFull(err: unknown): boolean {
  const code = codeOf(err);
  if (code !== undefined && DISK_FULL.has(code)) return true;
  return err instanceof SluiceError && err.data?.reason === 'disk_full';
}

/** The one line for a full disk: `disk full: <what> could not be written (<code>); …`. */
export function diskFullError(what: string, code: string): SluiceError {
  return new SluiceError(
    'unavailable',
    `disk full: ${what} could not be written (${code}); free some space and try again`,
    { reason: 'disk_full' },
  );
}

/**
 * `err` as `unavailable: disk full …` when it is a full disk (naming `what` could not be
 * written); anything else is returned unchanged.
 */
export function diskFullAsUnavailable(err: unknown, what: string): unknown {
  if (err instanceof SluiceError || !isDiskFull(err)) return err;
  return diskFullError(what, codeOf(err) ?? 'ENOSPC');
}

/** File system codes that refuse the user: permissions (EACCES, EPERM) or a read-only mount (EROFS). */
const PERMISSION_CODES = new Set(['EACCES', 'EPERM', 'EROFS']);

/** True when `code` is the file system refusing this user (see PERMISSION_CODES). */
export function isPermissionCode(code: string | undefined): code is string {
  return code !== undefined && PERMISSION_CODES.has(code);
}

/** A path as one line names it: control characters shown as `?`, at most 300 characters. */
function pathForLine(path: string): string {
  const flat = path.replace(/[\u0000-\u001f\u007f]/g, '?');
  return flat.length > 300 ? `${flat.slice(0, 300)}…` : flat;
}

/**
 * The one line for a file system that refuses: `cannot <action> <path> (permission denied)`, or
 * `(read-only file system)` for EROFS. Nothing was changed; the user fixes the owner or mode (or
 * runs as the home's owner), then tries again.
 */
export function permissionError(action: string, path: string, code: string): SluiceError {
  const why = code === 'EROFS' ? 'read-only file system' : 'permission denied';
  return new SluiceError('unavailable', `cannot ${action} ${pathForLine(path)} (${why})`, {
    reason: 'permission',
  });
}

/** What a refused system call was doing, for the line: `create`, `open`, `read`, else `write`. */
function actionOf(syscall: unknown): string {
  switch (syscall) {
    case 'mkdir':
    case 'mkdtemp':
      return 'create';
    case 'open':
      return 'open';
    case 'chmod':
    case 'fchmod':
      return 'change the mode of';
    case 'scandir':
    case 'readdir':
    case 'stat':
    case 'lstat':
    case 'access':
    case 'read':
      return 'read';
    default:
      return 'write';
  }
}

/**
 * How a lock wait reads: `10 s`, `1.5 s`, `250 ms`. Milliseconds as PostgreSQL's `lock_timeout`
 * counts them.
 */
export function formatLockWait(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/**
 * The lock timeout the session that failed with 55P03 ran under, when the store noted it on the
 * error (src/store/postgres/lock-timeout.ts): the URL may set its own, so no constant is right.
 */
function lockTimeoutOf(err: unknown): number | undefined {
  const ms = (err as { lockTimeoutMs?: unknown } | null)?.lockTimeoutMs;
  return typeof ms === 'number' && ms > 0 ? ms : undefined;
}

/** The busy line for a PostgreSQL statement that waited out `lock_timeout` (55P03). */
function postgresBusyLine(lockTimeoutMs: number | undefined): string {
  const held = lockTimeoutMs === undefined ? 'past its lock_timeout' : `for ${formatLockWait(lockTimeoutMs)}`;
  return `the database is busy: another session held a lock ${held}; nothing was changed, try again`;
}

/** PostgreSQL SQLSTATE classes and codes that are the server's or the network's state, not ours. */
function postgresFault(code: string, message: string, err: unknown): string | undefined {
  // lock_timeout (src/store/postgres/connect.ts): the statement, and its transaction, were undone.
  if (code === '55P03') return postgresBusyLine(lockTimeoutOf(err));
  if (code.startsWith('08')) return `the database connection failed (${code}): ${message}`;
  if (code.startsWith('57P')) return `the database server is shutting down or restarting (${code})`;
  if (code.startsWith('53')) return `the database server is out of resources (${code}): ${message}`;
  if (code === '3D000') return `the database is gone (${code}): ${message}`;
  // Tables and schemas exist once the store is open (migrations made them): missing now, they
  // were dropped under a running command.
  if (code === '3F000' || code === '42P01')
    return `the database schema is gone (${code}): ${message}; was it dropped?`;
  return undefined;
}

/** Network errors of a database client whose server went away. */
const CONNECTION_LOST = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/**
 * The `unavailable` error for a fault outside the process (see the module comment), or undefined
 * when `err` is something else (a SluiceError already, or a bug).
 */
export function storeFaultOf(err: unknown): SluiceError | undefined {
  if (err instanceof SluiceError || err === null || typeof err !== 'object') return undefined;
  const code = codeOf(err);
  const message = messageOf(err)
    .replace(/[\r\n]+/g, ' ')
    .slice(0, 200);
  if (code === SHM_FULL) return diskFullError("the database's shared-memory file (-shm)", code);
  if (isDiskFull(err)) return diskFullError('the database', code ?? 'ENOSPC');
  if (code === undefined) {
    // node-postgres says so in its message only.
    if (/^Connection terminated/.test(message))
      return new SluiceError('unavailable', `the database connection was lost: ${message}`, {
        reason: 'connection',
      });
    return undefined;
  }
  // A file the system refused (Node's fs errors carry the path and the call).
  const path = (err as { path?: unknown }).path;
  if (isPermissionCode(code) && typeof path === 'string')
    return permissionError(actionOf((err as { syscall?: unknown }).syscall), path, code);
  if (code.startsWith('SQLITE_IOERR') || code === 'EIO')
    return new SluiceError(
      'unavailable',
      `disk I/O error (${code}): the database could not be read or written`,
      {
        reason: 'io',
      },
    );
  if (code === 'SQLITE_READONLY_DBMOVED')
    return new SluiceError('unavailable', `the database file was moved or deleted while in use (${code})`, {
      reason: 'gone',
    });
  if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY' || code === 'EROFS' || code === 'EACCES')
    return new SluiceError('unavailable', `the database cannot be opened for writing (${code}): ${message}`, {
      reason: 'gone',
    });
  // A file that is not SQLite's (a --db naming the wrong file) or one damaged on disk: no retry
  // helps, but it is the file's state, not a bug (restore it from a backup or name another).
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT'))
    return new SluiceError(
      'unavailable',
      `the database file is damaged or is not a SQLite database (${code}): ${message}`,
      { reason: 'damaged' },
    );
  if (CONNECTION_LOST.has(code))
    return new SluiceError('unavailable', `the database connection was lost (${code})`, {
      reason: 'connection',
    });
  if (/^[0-9A-Z]{5}$/.test(code)) {
    const line = postgresFault(code, message, err);
    if (line !== undefined) return new SluiceError('unavailable', line, { reason: 'database' });
  }
  return undefined;
}

/** `err` as its `unavailable` store fault when it is one, else `err` unchanged. */
export function asStoreFault(err: unknown): unknown {
  return storeFaultOf(err) ?? err;
}
