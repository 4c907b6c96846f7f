// `sluice hooks uninstall claude|codex`: takes out of the client's files what `hooks install`
// puts there — the delivery hooks, the wake, the Sluice permission rules, the agent lock, the
// `sluice` MCP server — and nothing else. Files are edited like the installer does (parse, change,
// write only when something changed); a file the installer would refuse is refused here too.
import { join } from 'node:path';
import type { ClaudeScope } from './install-claude.js';
import { withoutSluiceTables } from './install-codex.js';
import {
  changeFor,
  type FileChange,
  type InstallPlan,
  type JsonObject,
  jsonText,
  parseJsonObject,
  readTextIfExists,
} from './install-files.js';
import { isSluiceEntry, removeHookEntries } from './install-hook-entries.js';

/** The environment variable the installer sets for the agent lock (src/surfaces/cli/agent-lock.ts). */
const AGENT_LOCK_ENV = 'SLUICE_AGENT_LOCK';

/** Permission rules only Sluice's installer writes: `sluice message …` plain or by path, its MCP tools. */
const SLUICE_RULE = /^(Bash\(sluice message:\*\)|Bash\(.*sluice\.js'? message:\*\)|mcp__sluice__\*)$/;

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Removes `values` matching `drop` from the array at `parent[key]`, and the key when emptied. */
function removeFromArray(parent: JsonObject, key: string, drop: (v: unknown) => boolean): void {
  const list = parent[key];
  if (!Array.isArray(list)) return;
  const kept = list.filter((v) => !drop(v));
  if (kept.length === list.length) return;
  if (kept.length === 0) delete parent[key];
  else parent[key] = kept;
}

/** Deletes `parent[key]` when it is an object left empty. */
function dropIfEmpty(parent: JsonObject, key: string): void {
  const value = parent[key];
  if (isObject(value) && Object.keys(value).length === 0) delete parent[key];
}

/** A JSON file's change after `edit`, or null when nothing of Sluice's was in it. */
function jsonRemoval(path: string, edit: (obj: JsonObject) => void): FileChange | null {
  const before = readTextIfExists(path);
  if (before === null) return null;
  const obj = parseJsonObject(before, path);
  const snapshot = JSON.stringify(obj);
  edit(obj);
  if (JSON.stringify(obj) === snapshot) return null;
  return changeFor(path, before, jsonText(obj));
}

/** Removes the `sluice` MCP server entry the installer writes (a server under that name running `mcp`). */
function removeSluiceServer(obj: JsonObject, key: string): void {
  const servers = obj[key];
  if (!isObject(servers) || !isObject(servers.sluice)) return;
  const args = servers.sluice.args;
  if (!Array.isArray(args) || !args.includes('mcp')) return;
  delete servers.sluice;
  dropIfEmpty(obj, key);
}

/** Plans `hooks uninstall claude` for a project or the user's settings. */
export function planClaudeUninstall(scope: ClaudeScope): InstallPlan {
  const settingsPath =
    'project' in scope
      ? join(scope.project, '.claude', 'settings.json')
      : join(scope.user.configDir, 'settings.json');
  const mcpPath = 'project' in scope ? join(scope.project, '.mcp.json') : scope.user.globalConfig;
  const changes: FileChange[] = [];
  const settings = jsonRemoval(settingsPath, (obj) => {
    removeHookEntries(obj, isSluiceEntry);
    if (isObject(obj.permissions)) {
      removeFromArray(obj.permissions, 'allow', (r) => typeof r === 'string' && SLUICE_RULE.test(r));
      dropIfEmpty(obj, 'permissions');
    }
    if ('project' in scope) removeFromArray(obj, 'enabledMcpjsonServers', (s) => s === 'sluice');
    if (isObject(obj.env) && AGENT_LOCK_ENV in obj.env) {
      delete obj.env[AGENT_LOCK_ENV];
      dropIfEmpty(obj, 'env');
    }
  });
  if (settings) changes.push(settings);
  const mcp = jsonRemoval(mcpPath, (obj) => removeSluiceServer(obj, 'mcpServers'));
  if (mcp) changes.push(mcp);
  return { changes, notes: [] };
}

/** Plans `hooks uninstall codex` for a Codex folder (`$CODEX_HOME`, `~/.codex` or `<project>/.codex`). */
export function planCodexUninstall(codexDir: string): InstallPlan {
  const configPath = join(codexDir, 'config.toml');
  const hooksPath = join(codexDir, 'hooks.json');
  const changes: FileChange[] = [];
  const configBefore = readTextIfExists(configPath);
  if (configBefore !== null) {
    const kept = withoutSluiceTables(configBefore, configPath).trimEnd();
    const after = kept === '' ? '' : `${kept}\n`;
    if (after.trimEnd() !== configBefore.trimEnd()) {
      const change = changeFor(configPath, configBefore, after);
      if (change) changes.push(change);
    }
  }
  const hooks = jsonRemoval(hooksPath, (obj) => removeHookEntries(obj, isSluiceEntry));
  if (hooks) changes.push(hooks);
  return {
    changes,
    notes: [
      'Codex keeps its trust records ([hooks.state."…"] in config.toml) for hooks that are gone; they are harmless',
    ],
  };
}
