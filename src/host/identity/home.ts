import { chmodSync, existsSync, lstatSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { SluiceError } from '../../core/errors.js';
import { HOST_OWNER_NAME } from '../../core/provenance.js';
import { isPermissionCode, permissionError } from '../../core/store-faults.js';
import { quoteInput } from '../../core/text.js';
import { isPostgresUrl, makePrivateFolder, openStore } from '../../store/open.js';
import { pingDatabase } from '../../store/ops/health.js';
import type { Durability, Store } from '../../store/store.js';
import { createHostContext, type HostContext, type HostLimits } from './context.js';
import { ensurePrincipal } from './principals.js';

/** The person `init` makes; provenance names their messages `owner` (core/provenance.ts). */
export const OWNER_NAME = HOST_OWNER_NAME;

/**
 * `--home`, else `$SLUICE_HOME`, else `~/.sluice`, as an absolute path. An empty `--home` or
 * `SLUICE_HOME` is `invalid_params`: resolved, it would be the current directory, and a database
 * would appear wherever the command was run.
 */
export function resolveHome(explicit?: string): string {
  const chosen = explicit ?? process.env.SLUICE_HOME;
  if (chosen === '') {
    throw new SluiceError(
      'invalid_params',
      `${explicit === '' ? '--home' : 'SLUICE_HOME'} is empty: name the home folder, or leave it unset for ~/.sluice`,
    );
  }
  return resolve(chosen ?? join(homedir(), '.sluice'));
}

export interface OpenHostOptions {
  home?: string | undefined;
  db?: string | undefined;
  durability?: Durability | undefined;
  limits?: Partial<HostLimits> | undefined;
  pollMs?: number | undefined;
}

/** Where a notice about the home goes (one line); stderr unless a caller says otherwise. */
export type NoticeSink = (line: string) => void;
const toStderr: NoticeSink = (line) => process.stderr.write(`sluice: ${line}\n`);

/**
 * What only a Sluice home holds: a folder with one of these is one, whatever its mode. A home used
 * only with PostgreSQL has no `sluice.db` and no `blobs` (they live in the database), so Sluice's
 * own folders count too; `logs` only with Sluice's own log files in it (a project may have logs).
 */
const HOME_MARKERS = ['sluice.db', 'blobs', 'serve-origin', 'drivers', 'materialized', 'hook-sessions'];
const SLUICE_LOGS = ['logs/serve.log', 'logs/errors.log'];

/** True when `folder` is empty or holds what a Sluice home holds: Sluice may make it private. */
function mayTighten(folder: string): boolean {
  const names = readdirSync(folder);
  return (
    names.length === 0 ||
    names.some((name) => HOME_MARKERS.includes(name)) ||
    SLUICE_LOGS.some((log) => existsSync(join(folder, log)))
  );
}

/**
 * The home holds every message, token hash and the cursor secret: only its owner may enter it.
 * A home another local user can read or enter (group/other bits, e.g. 0755 from an older
 * version or a default umask) is tightened to 0700 with a one-line notice — but only when it is
 * empty or already a Sluice home: any other folder open to others (`--home ~/projects` by
 * mistake) is refused with `invalid_params` and its mode left as it is, since the user's group
 * may rely on it. A home that is not a folder, or is a symlink, is left to the caller (openStore
 * refuses a non-folder). One this user may not chmod (another user's) is
 * `unavailable: cannot chmod 0700 the home … (permission denied)`.
 */
export function securePrivateHome(home: string, notice: NoticeSink = toStderr): void {
  let mode: number;
  try {
    const st = lstatSync(home);
    if (!st.isDirectory()) return;
    mode = st.mode & 0o777;
  } catch {
    return;
  }
  if ((mode & 0o077) === 0) return;
  const shownMode = mode.toString(8).padStart(4, '0');
  if (!mayTighten(home)) {
    throw new SluiceError(
      'invalid_params',
      `${quoteInput(home, 200)} does not look like a Sluice home (it holds other files and is open to other local users, mode ${shownMode}); Sluice changes nothing there: use a new folder, or run chmod 700 on it yourself`,
    );
  }
  try {
    chmodSync(home, 0o700);
  } catch (err) {
    // Another user's home (only its owner may chmod it), or a read-only mount.
    const code = (err as NodeJS.ErrnoException).code;
    if (isPermissionCode(code)) throw permissionError('chmod 0700 the home', home, code);
    throw err;
  }
  notice(`${home} was open to other local users (mode ${shownMode}); tightened to 0700`);
}

/** The SQLite file and its WAL/SHM (SQLite gives those the database file's mode) are 0600. */
function securePrivateDatabase(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if ((lstatSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    } catch {
      // absent (no WAL yet): SQLite creates it with the database file's mode
    }
  }
}

/** The embedded database's file: `--db`/`SLUICE_DB` when it names one, else the home's. */
function sqliteFile(home: string, url: string | undefined): string {
  return url && url !== '' ? url : join(home, 'sluice.db');
}

/**
 * `--db`, else `$SLUICE_DB`: a `postgres://` URL, a SQLite file's path, or nothing (the home's
 * file). Any other URL (`mysql://…`, `sqlite:///…`, a mistyped `postgress://…`) is refused: taken
 * as a path it would make a database in a folder named after the scheme.
 */
function databaseUrl(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const url = explicit ?? env.SLUICE_DB;
  if (url !== undefined && !isPostgresUrl(url) && /^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new SluiceError(
      'invalid_params',
      `--db / SLUICE_DB takes a postgres:// URL or a SQLite file's path, not ${quoteInput(url, 200)}`,
    );
  }
  return url;
}

/**
 * The database this process opens (`--db`, else `$SLUICE_DB`), spelled so that a process started
 * elsewhere opens the same one: a `postgres://` URL as given, a SQLite file's path made absolute (a
 * driver runs in the agent's folder, where a relative path names another file), or undefined for
 * the home's own file (nothing named, or an empty value). What the host hands to agents it starts
 * and to their clients' settings: the flag alone would lose a store named by the environment.
 */
export function databaseLocation(
  explicit: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const url = databaseUrl(explicit, env);
  if (url === undefined || url === '') return undefined;
  return isPostgresUrl(url) ? url : resolve(url);
}

/**
 * For the commands that create a home (init, start, serve): the folder of a SQLite file named by
 * `--db`/`SLUICE_DB` is created like the home (0700). Other commands and hooks never create one.
 */
export function ensureDatabaseFolder(options: { db?: string | undefined }): void {
  const url = databaseUrl(options.db);
  if (url === undefined || url === '' || isPostgresUrl(url)) return;
  makePrivateFolder(dirname(resolve(url)), 'the folder of the database file');
}

/** Throws `not_found` when the folder of a SQLite file named by `--db`/`SLUICE_DB` is missing. */
function assertDatabaseFolder(url: string | undefined): void {
  if (url === undefined || url === '' || isPostgresUrl(url)) return;
  const folder = dirname(resolve(url));
  try {
    if (statSync(folder).isDirectory()) return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return;
  }
  throw new SluiceError(
    'not_found',
    `no folder ${folder} for the database file ${resolve(url)}: check --db / SLUICE_DB, or create it with "sluice start --db ${url}"`,
  );
}

/** Opens the store for a home and builds the host context on it. */
export async function openHost(options: OpenHostOptions = {}): Promise<HostContext> {
  const url = databaseUrl(options.db);
  assertDatabaseFolder(url);
  const home = resolveHome(options.home);
  securePrivateHome(home);
  const store: Store = await openStore({
    home,
    url,
    durability: options.durability ?? 'full',
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
  });
  if (!isPostgresUrl(url)) securePrivateDatabase(sqliteFile(home, url));
  try {
    return await createHostContext({ store, home, ...(options.limits ? { limits: options.limits } : {}) });
  } catch (err) {
    await store.close();
    throw err;
  }
}

/**
 * Throws `not_found` unless the home's database exists (the embedded SQLite file; a PostgreSQL
 * URL is not checked here). Commands that only use a home call this first, so a typo in `--home`
 * or `SLUICE_HOME` is one clear line instead of a new, empty home that knows nobody.
 */
export function assertHomeExists(options: { home?: string | undefined; db?: string | undefined }): void {
  const url = databaseUrl(options.db);
  if (isPostgresUrl(url)) return;
  const home = resolveHome(options.home);
  const file = resolve(sqliteFile(home, url));
  try {
    statSync(file);
    return;
  } catch (err) {
    // Only a file that is not there is a missing home; one this process may not read (a sandbox,
    // another user's home) goes on to fail where it is opened, with that error.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return;
  }
  throw new SluiceError(
    'not_found',
    url && url !== ''
      ? `no Sluice database at ${file}: check --db / SLUICE_DB, or create it with "sluice start --db ${url}"`
      : `no Sluice home at ${home}: check --home / SLUICE_HOME, or create it with "sluice start" (or npm start)`,
  );
}

/** Idempotent: creates the home, database, cursor secret and the `owner` person. */
export async function initHome(ctx: HostContext): Promise<{ home: string; owner: string }> {
  await ensurePrincipal(ctx, OWNER_NAME, 'person');
  return { home: ctx.home, owner: OWNER_NAME };
}

/** Throws unless the store answers a trivial read now (`/healthz`). */
export async function pingStore(ctx: HostContext): Promise<void> {
  await pingDatabase(ctx.store.db);
}
