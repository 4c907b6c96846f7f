// Where `sluice hooks install claude` writes, and how its entries are taken out again.
//
// A project's `.claude/settings.json` and `.mcp.json` are the files a team commits; what Sluice
// writes is per-user (absolute node and sluice paths, the Sluice home, the database URL, the agent
// lock). So a project install writes `.claude/settings.local.json` (Claude Code's per-user project
// settings) and the MCP server in local scope: `projects[<project>].mcpServers` of the user's
// `.claude.json`, where `claude mcp add --scope local` puts it (observed with Claude Code 2.1.332).
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { SluiceError } from '../../core/errors.js';
import {
  changeFor,
  type FileChange,
  type JsonObject,
  jsonText,
  parseJsonObject,
  readTextIfExists,
} from './install-files.js';
import { isSluiceEntry, removeHookEntries } from './install-hook-entries.js';

/** Claude Code's user config: its folder (`settings.json`) and its global JSON (`.claude.json`). */
export interface ClaudeUserPaths {
  configDir: string;
  globalConfig: string;
}

/** Where to install for Claude Code: one project (per-user files), or the user's own settings. */
export type ClaudeScope = { project: string; globalConfig: string } | { user: ClaudeUserPaths };

/** The files an install writes for `scope`, and (project) the shared files older versions wrote. */
export interface ClaudeTargets {
  /** The settings file holding hooks, permission rules and the agent lock. */
  settings: string;
  /** The JSON file holding the MCP server. */
  mcpFile: string;
  /** The key under `projects` of `mcpFile` (local scope), or undefined for its top-level `mcpServers`. */
  mcpProject: string | undefined;
  /** Project: the shared files Sluice wrote before 0.1 (`.claude/settings.json`, `.mcp.json`). */
  legacy: { settings: string; mcp: string } | undefined;
  /** The folder to remove when uninstall leaves it empty (`<project>/.claude`). */
  pruneDir: string | undefined;
}

/** The files `hooks install claude` writes for `scope`. */
export function claudeTargets(scope: ClaudeScope): ClaudeTargets {
  if ('user' in scope) {
    return {
      settings: join(scope.user.configDir, 'settings.json'),
      mcpFile: scope.user.globalConfig,
      mcpProject: undefined,
      legacy: undefined,
      pruneDir: undefined,
    };
  }
  const dotClaude = join(scope.project, '.claude');
  return {
    settings: join(dotClaude, 'settings.local.json'),
    mcpFile: scope.globalConfig,
    mcpProject: claudeProjectKey(scope.project),
    legacy: { settings: join(dotClaude, 'settings.json'), mcp: join(scope.project, '.mcp.json') },
    pruneDir: dotClaude,
  };
}

/** The main work tree of the repository whose `.git` is `dotGit` (a folder, or a worktree's file). */
function mainWorkTree(dotGit: string): string {
  if (statSync(dotGit).isDirectory()) return dirname(dotGit);
  // A linked worktree: `.git` says `gitdir: <main>/.git/worktrees/<name>`, whose `commondir`
  // names the main `.git`; Claude Code keys such a worktree by the main work tree.
  const match = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'));
  if (!match) return dirname(dotGit);
  const gitDir = resolve(dirname(dotGit), (match[1] as string).trim());
  const common = readTextIfExists(join(gitDir, 'commondir'));
  if (common === null) return dirname(dotGit);
  const commonDir = resolve(gitDir, common.trim());
  return isAbsolute(commonDir) ? dirname(commonDir) : dirname(dotGit);
}

/**
 * The key Claude Code files a folder's local settings under in `.claude.json`: the main work tree
 * of the git repository holding the folder (symlinks resolved), else the folder itself.
 */
export function claudeProjectKey(project: string): string {
  let dir: string;
  try {
    dir = realpathSync(project);
  } catch {
    return resolve(project);
  }
  for (let at = dir; ; at = dirname(at)) {
    const dotGit = join(at, '.git');
    if (existsSync(dotGit)) return mainWorkTree(dotGit);
    if (dirname(at) === at) return dir;
  }
}

export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Deletes `parent[key]` when it is an object or array left empty; says whether it did. */
export function dropIfEmpty(parent: JsonObject, key: string): boolean {
  const value = parent[key];
  const empty = isObject(value)
    ? Object.keys(value).length === 0
    : Array.isArray(value) && value.length === 0;
  if (empty) delete parent[key];
  return empty;
}

/** Removes the values `drop` selects from the array at `parent[key]` (and the key when it empties it). */
function removeFromArray(parent: JsonObject, key: string, drop: (v: unknown) => boolean): boolean {
  const list = parent[key];
  if (!Array.isArray(list)) return false;
  const kept = list.filter((v) => !drop(v));
  if (kept.length === list.length) return false;
  if (kept.length === 0) delete parent[key];
  else parent[key] = kept;
  return true;
}

/** The environment variable the installer sets for the agent lock (src/surfaces/cli/agent-lock.ts). */
const AGENT_LOCK_ENV = 'SLUICE_AGENT_LOCK';

/** Permission rules only Sluice's installer writes: `sluice message …` plain or by path, its MCP tools. */
const SLUICE_RULE = /^(Bash\(sluice message:\*\)|Bash\(.*sluice\.js'? message:\*\)|mcp__sluice__\*)$/;

/**
 * Takes Sluice's entries out of a Claude Code settings object: the hooks and the wake, the
 * permission rules, the agent lock, the `sluice` approval of `.mcp.json` servers. A container is
 * removed only when this emptied it; everything else stays as it was.
 */
export function removeClaudeSettingsEntries(obj: JsonObject): void {
  removeHookEntries(obj, isSluiceEntry);
  const permissions = obj.permissions;
  if (isObject(permissions)) {
    const rule = (r: unknown) => typeof r === 'string' && SLUICE_RULE.test(r);
    if (removeFromArray(permissions, 'allow', rule)) dropIfEmpty(obj, 'permissions');
  }
  removeFromArray(obj, 'enabledMcpjsonServers', (s) => s === 'sluice');
  const env = obj.env;
  if (isObject(env) && AGENT_LOCK_ENV in env) {
    delete env[AGENT_LOCK_ENV];
    dropIfEmpty(obj, 'env');
  }
}

/** Removes the `sluice` server the installer writes (one under that name running `mcp`) from `obj.mcpServers`. */
export function removeSluiceServer(obj: JsonObject): boolean {
  const servers = obj.mcpServers;
  if (!isObject(servers) || !isObject(servers.sluice)) return false;
  const args = servers.sluice.args;
  if (!Array.isArray(args) || !args.includes('mcp')) return false;
  delete servers.sluice;
  dropIfEmpty(obj, 'mcpServers');
  return true;
}

/** Removes the local-scope `sluice` server of `project` from a global `.claude.json` object. */
export function removeLocalSluiceServer(obj: JsonObject, project: string): void {
  const projects = obj.projects;
  if (!isObject(projects) || !isObject(projects[project])) return;
  if (removeSluiceServer(projects[project]) && dropIfEmpty(projects, project)) dropIfEmpty(obj, 'projects');
}

/**
 * A JSON file's change after `edit`, or null when the edit changed nothing (the file is then not
 * rewritten, so its formatting stays). With `deleteWhenEmpty`, a file the edit leaves as `{}` is
 * deleted (and `pruneDir` when that empties it): what uninstall does with the files install created.
 */
export function jsonEdit(
  path: string,
  edit: (obj: JsonObject) => void,
  options: { deleteWhenEmpty?: boolean; pruneDir?: string | undefined; createMissing?: boolean } = {},
): FileChange | null {
  const before = readTextIfExists(path);
  if (before === null && !options.createMissing) return null;
  const obj = parseJsonObject(before, path);
  const snapshot = JSON.stringify(obj);
  edit(obj);
  if (before !== null && JSON.stringify(obj) === snapshot) return null;
  if (options.deleteWhenEmpty && Object.keys(obj).length === 0) {
    if (before === null) return null;
    return { path, before, after: null, ...(options.pruneDir ? { pruneDir: options.pruneDir } : {}) };
  }
  return changeFor(path, before, jsonText(obj, before));
}

/**
 * Refuses a database URL that carries a password for an install into a project folder: files
 * there get copied, shared, committed. The password belongs in `~/.pgpass` or `PGPASSWORD`.
 */
export function assertNoPasswordInProject(db: string | undefined): void {
  if (db === undefined) return;
  let url: URL;
  try {
    url = new URL(db);
  } catch {
    return;
  }
  if (url.password !== '' || url.searchParams.has('password')) {
    throw new SluiceError(
      'invalid_params',
      'the database URL holds a password, which would be written into the project; put the password in ~/.pgpass or PGPASSWORD and pass --db without it, or install with --user (nothing was changed)',
    );
  }
}
