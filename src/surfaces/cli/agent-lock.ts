// The agent lock (DESIGN.md §8 I8): what a model's pre-approved `sluice …` runs under. The driver's
// shim and `hooks install` put it in the environment; under it the CLI acts only as the locked agent
// on the locked store, runs only the agent's own inbox commands, and reads attachments only from
// the folders the user chose. Any override that differs from the lock is refused with `denied`.
import { constants, readlinkSync, realpathSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { SluiceError } from '../../core/errors.js';

/** The environment variable that carries the lock (JSON, see {@link AgentLock}). */
export const AGENT_LOCK_ENV = 'SLUICE_AGENT_LOCK';

/** Who and where a locked CLI acts, and where `--attach` may read from. */
export interface AgentLock {
  /** The only principal the CLI acts as. */
  agent: string;
  /** The only Sluice home (absolute). */
  home: string;
  /** The only database URL; absent means the SQLite file in `home`. */
  db?: string | undefined;
  /** Absolute folders `--attach` may read from (besides `<home>/materialized`). */
  attachRoots: string[];
}

/**
 * Commands a locked CLI runs: the agent's own inbox work. `message …` acts on the actor's own inbox
 * or sends as it; `delivery` and `wait` read its own queue; `mcp` serves its own tools. Anything
 * else (channel create, token, agent add, serve, hooks install, queue, turn, drive, …) is refused.
 */
const AGENT_COMMANDS: readonly string[] = ['message', 'delivery', 'wait', 'mcp'];

/** Serialises a lock for the environment. */
export function encodeAgentLock(lock: AgentLock): string {
  return JSON.stringify({
    agent: lock.agent,
    home: lock.home,
    ...(lock.db !== undefined ? { db: lock.db } : {}),
    attachRoots: lock.attachRoots,
  });
}

/**
 * The lock in `env`, or undefined when there is none. A variable that is set but unreadable is
 * refused, never ignored: a lock that fails open would be no lock.
 */
export function agentLockFrom(env: NodeJS.ProcessEnv = process.env): AgentLock | undefined {
  const raw = env[AGENT_LOCK_ENV];
  if (raw === undefined || raw === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new SluiceError('denied', `${AGENT_LOCK_ENV} is not valid JSON; refusing to run unlocked`);
  }
  const v = value as Partial<Record<keyof AgentLock, unknown>>;
  const roots = v.attachRoots ?? [];
  if (
    typeof v.agent !== 'string' ||
    v.agent === '' ||
    typeof v.home !== 'string' ||
    !isAbsolute(v.home) ||
    (v.db !== undefined && typeof v.db !== 'string') ||
    !Array.isArray(roots) ||
    !roots.every((r) => typeof r === 'string' && isAbsolute(r))
  ) {
    throw new SluiceError('denied', `${AGENT_LOCK_ENV} is malformed; refusing to run unlocked`);
  }
  return { agent: v.agent, home: v.home, db: v.db as string | undefined, attachRoots: roots as string[] };
}

/** A path with symlinks resolved where it exists (so two spellings of one folder compare equal). */
function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function isWithin(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** What the command line and environment ask for; each is compared with the lock. */
export interface RequestedIdentity {
  /** The command path, e.g. `message send`. */
  command: string;
  as?: string | undefined;
  home?: string | undefined;
  db?: string | undefined;
}

/**
 * Checks one invocation against the lock and returns what to act as. Overrides that only repeat
 * the locked values are accepted (the driver's own hooks pass `--as AGENT --home HOME`); anything
 * else is `denied` before the store is opened.
 */
export function enforceAgentLock(
  lock: AgentLock,
  requested: RequestedIdentity,
  env: NodeJS.ProcessEnv = process.env,
): { as: string; home: string; db: string | undefined } {
  const top = requested.command.split(' ')[0] ?? '';
  if (!AGENT_COMMANDS.includes(top)) {
    throw new SluiceError(
      'denied',
      `\`sluice ${requested.command}\` is not an agent command; this shell is locked to agent ${lock.agent} (${AGENT_LOCK_ENV})`,
    );
  }
  const sameAgent = (name: string | undefined) => name === undefined || name === '' || name === lock.agent;
  const homes = [requested.home, env.SLUICE_HOME];
  const dbs = [requested.db, env.SLUICE_DB];
  if (!sameAgent(requested.as) || !sameAgent(env.SLUICE_AS)) {
    throw new SluiceError(
      'denied',
      `locked to agent ${lock.agent}: --as/SLUICE_AS cannot name another principal`,
    );
  }
  const lockedHome = canonical(lock.home);
  for (const home of homes) {
    if (home !== undefined && home !== '' && canonical(home) !== lockedHome) {
      throw new SluiceError(
        'denied',
        `locked to agent ${lock.agent}: --home/SLUICE_HOME cannot switch the store`,
      );
    }
  }
  const lockedDb = lock.db ?? join(lock.home, 'sluice.db');
  for (const db of dbs) {
    if (db === undefined || db === '') continue;
    const same = lock.db === undefined ? canonical(db) === canonical(lockedDb) : db === lock.db;
    if (!same) {
      throw new SluiceError(
        'denied',
        `locked to agent ${lock.agent}: --db/SLUICE_DB cannot switch the store`,
      );
    }
  }
  return { as: lock.agent, home: lock.home, db: lock.db };
}

/**
 * A folder too broad to attach from: the filesystem root, the user's home folder or one of its
 * ancestors. A driver started from `~` would otherwise make `~/.ssh` attachable (found in review).
 */
export function isBroadFolder(folder: string, userHome: string = homedir()): boolean {
  const path = canonical(folder);
  return path === sep || isWithin(path, canonical(userHome));
}

/**
 * The folders a locked `--attach` may read from: the user's roots — except any that is the home
 * folder or above it ({@link isBroadFolder}) — and the materialised copies.
 */
export function attachRootsOf(lock: AgentLock): string[] {
  const chosen = lock.attachRoots.filter((root) => !isBroadFolder(root));
  return [...chosen, join(lock.home, 'materialized')].map(canonical);
}

/**
 * Reads an attachment, confined by the lock when there is one: the file's real path (symlinks
 * resolved) must lie inside an attach root, and never in the Sluice home outside its materialised
 * copies (the database and the cursor secret live there, even when the home sits in a root).
 * Locked or not, only a regular file of at most `maxBytes` is read: a device (/dev/zero) or a FIFO
 * would otherwise be read without end or hang the command.
 */
export async function readAttachment(
  lock: AgentLock | undefined,
  file: string,
  maxBytes: number = Number.MAX_SAFE_INTEGER,
): Promise<Buffer> {
  let real: string;
  try {
    real = realpathSync(resolve(file));
  } catch {
    throw new SluiceError('not_found', `cannot read attachment ${file}`);
  }
  const mayAttach = lock ? lockedAttachCheck(lock) : () => true;
  if (!mayAttach(real)) {
    throw new SluiceError(
      'denied',
      `attachment ${file} is outside the folders agent ${lock?.agent} may attach from (${lock ? attachRootsOf(lock).join(', ') : ''})`,
    );
  }
  // Open the checked path without following a final link, then check what the descriptor really
  // is (Linux: /proc/self/fd), so a link swapped in between the two cannot redirect the read.
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // O_NONBLOCK: a FIFO must not hang the command at open.
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    throw new SluiceError('not_found', `cannot read attachment ${file}`);
  }
  try {
    const opened = descriptorPath(handle.fd) ?? real;
    if (!mayAttach(opened)) {
      throw new SluiceError('denied', `attachment ${file} changed while it was read; refused`);
    }
    const stat = await handle.stat();
    if (!stat.isFile()) throw new SluiceError('invalid_params', `attachment ${file} is not a regular file`);
    if (stat.size > maxBytes) {
      throw new SluiceError(
        'too_large',
        `attachment ${file} is ${stat.size} bytes; the limit is ${maxBytes}`,
      );
    }
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Whether a real path lies where a locked agent may attach from. */
function lockedAttachCheck(lock: AgentLock): (path: string) => boolean {
  const roots = attachRootsOf(lock);
  const home = canonical(lock.home);
  return (path) =>
    roots.some((root) => isWithin(root, path)) &&
    (!isWithin(home, path) || isWithin(join(home, 'materialized'), path));
}

function descriptorPath(fd: number): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}
