// Shared pieces of `sluice hooks install`: where the CLI lives, how to quote it for a shell, and
// how to change a user's config files without clobbering them (read, merge, write only on change).
import {
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { SluiceError } from '../../core/errors.js';
import { shellWord } from '../../core/shell-word.js';
import { sluicePackage } from '../sluice-package.js';

/**
 * One file the installer would write: its old text (null when new) and its new text (null: the
 * file is deleted, and then `pruneDir` too when that leaves the folder empty).
 */
export interface FileChange {
  path: string;
  before: string | null;
  after: string | null;
  pruneDir?: string;
}

/** What an install would do: the files that change, and lines to tell the user. */
export interface InstallPlan {
  changes: FileChange[];
  notes: string[];
}

/** How a client should start Sluice: absolute node and bin paths, so it works from any cwd. */
export interface SluiceLauncher {
  node: string;
  bin: string;
}

/** The running node binary and this package's bin/sluice.js. */
export function currentLauncher(): SluiceLauncher {
  const root = sluicePackage()?.root;
  const bin = root === undefined ? undefined : join(root, 'bin', 'sluice.js');
  if (bin !== undefined && existsSync(bin)) return { node: process.execPath, bin };
  throw new SluiceError('not_found', 'cannot find bin/sluice.js next to this installation');
}

/** Words joined into one command for a POSIX shell (hook commands run through `sh -c`). */
export function shellCommand(words: readonly string[]): string {
  return words.map(shellWord).join(' ');
}

export function readTextIfExists(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new SluiceError('unavailable', `cannot read ${path}: ${(err as Error).message}`);
  }
}

export type JsonObject = Record<string, unknown>;

/** A config file's JSON object ({} when the file is missing); refuses anything else, unchanged. */
export function parseJsonObject(text: string | null, path: string): JsonObject {
  if (text === null || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SluiceError('invalid_params', `${path} is not valid JSON; fix it first (nothing was changed)`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SluiceError('invalid_params', `${path} does not hold a JSON object (nothing was changed)`);
  }
  if (nestingDepth(value) > MAX_CONFIG_DEPTH) {
    throw new SluiceError(
      'invalid_params',
      `${path} is nested more than ${MAX_CONFIG_DEPTH} levels deep; Sluice does not edit it (nothing was changed)`,
    );
  }
  return value as JsonObject;
}

/**
 * Deeper than any settings file a client writes. Writing a much deeper value back overflows
 * JSON.stringify's stack (an internal error), so such a file is refused before it is edited.
 */
const MAX_CONFIG_DEPTH = 64;

/** How deep arrays and objects nest in a parsed JSON value, walked without recursion. */
function nestingDepth(root: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[root, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, depth] = next;
    if (value === null || typeof value !== 'object') continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_CONFIG_DEPTH) return deepest;
    for (const child of Object.values(value)) pending.push([child, depth + 1]);
  }
  return deepest;
}

/** The object at `key`, created when missing; refuses a non-object so user data is never lost. */
export function objectAt(parent: JsonObject, key: string, path: string): JsonObject {
  const value = parent[key];
  if (value === undefined) {
    const created: JsonObject = {};
    parent[key] = created;
    return created;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SluiceError('invalid_params', `${path}: "${key}" is not an object (nothing was changed)`);
  }
  return value as JsonObject;
}

/** The array at `key`, created when missing; refuses a non-array. */
export function arrayAt(parent: JsonObject, key: string, path: string): unknown[] {
  const value = parent[key];
  if (value === undefined) {
    const created: unknown[] = [];
    parent[key] = created;
    return created;
  }
  if (!Array.isArray(value)) {
    throw new SluiceError('invalid_params', `${path}: "${key}" is not an array (nothing was changed)`);
  }
  return value;
}

/** A change for `path` when `after` differs from the current text; null when nothing changes. */
export function changeFor(path: string, before: string | null, after: string | null): FileChange | null {
  return before === after ? null : { path, before, after };
}

/**
 * The JSON text of `value` (2-space indent, as Claude Code writes its files); ends with a newline
 * unless the file it replaces did not, so a file that goes in and out unchanged keeps its bytes.
 */
export function jsonText(value: unknown, before: string | null = null): string {
  const text = JSON.stringify(value, null, 2);
  return before !== null && before !== '' && !before.endsWith('\n') ? text : `${text}\n`;
}

/** The real path of `path`, or of its deepest existing ancestor joined with the rest. */
function realPathOfWhatExists(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realPathOfWhatExists(parent), relative(parent, path));
  }
}

/**
 * A project install writes only inside the project: a `.claude`/`.codex` folder (or a settings
 * file) that is a symlink leading elsewhere would let whoever planted it in a repository make
 * `hooks install` rewrite another agent's or another project's config. Refused, nothing written.
 */
export function assertWritesInsideProject(project: string, changes: readonly FileChange[]): void {
  const root = realPathOfWhatExists(resolve(project));
  for (const change of changes) {
    const real = realPathOfWhatExists(resolve(change.path));
    const rel = relative(root, real);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      throw new SluiceError(
        'denied',
        `${change.path} leads out of the project (to ${real}) through a symlink; nothing was changed`,
      );
    }
  }
}

/** Removes `dir` when it is empty; a folder still holding anything stays as it is. */
function pruneEmptyDir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT') throw err;
  }
}

/** Writes every change atomically (temp file + rename), keeping an existing file's mode. */
export function applyChanges(changes: readonly FileChange[]): void {
  for (const change of changes) {
    if (change.after === null) {
      unlinkSync(change.path);
      if (change.pruneDir !== undefined) pruneEmptyDir(change.pruneDir);
      continue;
    }
    mkdirSync(dirname(change.path), { recursive: true });
    const mode = change.before === null ? 0o600 : statSync(change.path).mode & 0o777;
    const temp = `${change.path}.sluice-${process.pid}.tmp`;
    writeFileSync(temp, change.after, { mode });
    renameSync(temp, change.path);
  }
}

/** A readable preview of the changes: per file, the lines removed (-) and added (+). */
export function describeChanges(changes: readonly FileChange[]): string {
  return changes
    .map((c) => {
      const before = c.before === null ? [] : c.before.split('\n');
      if (c.after === null) return [`--- ${c.path} (deleted)`, ...before.map((l) => `-${l}`)].join('\n');
      const after = c.after.split('\n');
      const kept = new Set(before);
      const now = new Set(after);
      const removed = before.filter((l) => !now.has(l)).map((l) => `-${l}`);
      const added = after.filter((l) => !kept.has(l)).map((l) => `+${l}`);
      const head = c.before === null ? `+++ ${c.path} (new file)` : `--- ${c.path}\n+++ ${c.path}`;
      return [head, ...removed, ...added].join('\n');
    })
    .join('\n');
}

export function absolute(path: string): string {
  return resolve(path);
}
