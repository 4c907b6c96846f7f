import { join } from 'node:path';
import { AGENT_LOCK_ENV, encodeAgentLock } from '../cli/agent-lock.js';
import {
  arrayAt,
  changeFor,
  type FileChange,
  type InstallPlan,
  type JsonObject,
  jsonText,
  objectAt,
  parseJsonObject,
  readTextIfExists,
  type SluiceLauncher,
  shellCommand,
} from './install-files.js';
import {
  type HookDeliveryMode,
  isSluiceWake,
  mergeSluiceHooks,
  mergeSluiceWake,
  removeHookEntries,
  type StoreLocation,
  WAKE_HOOK_TIMEOUT_S,
} from './install-hook-entries.js';

/** Where to install for Claude Code: one project, or the user's own settings. */
export type ClaudeScope = { project: string } | { user: { configDir: string; globalConfig: string } };

export interface ClaudeInstallOptions extends HookDeliveryMode {
  agent: string;
  scope: ClaudeScope;
  store: StoreLocation;
  launcher: SluiceLauncher;
  /** Install the wake (an asyncRewake hook running `sluice wait`); default true (`--no-wake`: false). */
  wake?: boolean | undefined;
}

/** Claude Code's user config folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`; and its global JSON. */
export function claudeUserPaths(
  env: NodeJS.ProcessEnv,
  homeDir: string,
): { configDir: string; globalConfig: string } {
  const configured = env.CLAUDE_CONFIG_DIR;
  return configured
    ? { configDir: configured, globalConfig: join(configured, '.claude.json') }
    : { configDir: join(homeDir, '.claude'), globalConfig: join(homeDir, '.claude.json') };
}

/** The MCP server entry that starts `sluice mcp --as AGENT` for this store. */
export function mcpServerEntry(launcher: SluiceLauncher, agent: string, store: StoreLocation): JsonObject {
  const env: Record<string, string> = { SLUICE_HOME: store.home };
  if (store.db !== undefined) env.SLUICE_DB = store.db;
  return { type: 'stdio', command: launcher.node, args: [launcher.bin, 'mcp', '--as', agent], env };
}

/** Bash rules that let the model run `sluice message …` (plain and node+bin form) and the MCP tools. */
export function claudeAllowRules(launcher: SluiceLauncher): string[] {
  return [
    'Bash(sluice message:*)',
    `Bash(${shellCommand([launcher.node, launcher.bin])} message:*)`,
    'mcp__sluice__*',
  ];
}

/**
 * The agent lock the installed settings carry in `env`: this agent, this store, and `--attach` from
 * the project folder (a user-wide install names no folder: only materialised copies).
 */
export function claudeAgentLock(options: Pick<ClaudeInstallOptions, 'agent' | 'scope' | 'store'>): string {
  return encodeAgentLock({
    agent: options.agent,
    home: options.store.home,
    db: options.store.db,
    attachRoots: 'project' in options.scope ? [options.scope.project] : [],
  });
}

function addMissing(list: unknown[], values: readonly string[]): string[] {
  const added = values.filter((v) => !list.includes(v));
  list.push(...added);
  return added;
}

function jsonChange(path: string, edit: (obj: JsonObject) => void): FileChange | null {
  const before = readTextIfExists(path);
  const obj = parseJsonObject(before, path);
  edit(obj);
  const after = jsonText(obj);
  // Unchanged content keeps the user's own formatting: no rewrite at all.
  if (before !== null && JSON.stringify(parseJsonObject(before, path)) === JSON.stringify(obj)) return null;
  return changeFor(path, before, after);
}

/**
 * Plans the Claude Code install: SessionStart + UserPromptSubmit hooks and `permissions.allow`
 * in settings.json, and the `sluice` MCP server (project: `.mcp.json`, approved through
 * `enabledMcpjsonServers`; user: `mcpServers` in the global `.claude.json`).
 */
export function planClaudeInstall(options: ClaudeInstallOptions): InstallPlan {
  const { agent, scope, store, launcher } = options;
  const settingsPath =
    'project' in scope
      ? join(scope.project, '.claude', 'settings.json')
      : join(scope.user.configDir, 'settings.json');
  const mcpPath = 'project' in scope ? join(scope.project, '.mcp.json') : scope.user.globalConfig;
  const notes: string[] = [];
  const allowRules = claudeAllowRules(launcher);
  let addedRules: string[] = [];
  const changes: FileChange[] = [];

  const settings = jsonChange(settingsPath, (obj) => {
    mergeSluiceHooks(obj, launcher, 'claude', agent, store, settingsPath, { timeout: 10 }, options);
    if (options.wake === false) removeHookEntries(obj, isSluiceWake);
    else mergeSluiceWake(obj, launcher, agent, store, settingsPath);
    const permissions = objectAt(obj, 'permissions', settingsPath);
    addedRules = addMissing(arrayAt(permissions, 'allow', `${settingsPath} permissions`), allowRules);
    // The allow rules above approve `sluice message …` whatever its flags; the lock in the session's
    // environment is what keeps it this agent on this store (DESIGN.md §8 I8).
    objectAt(obj, 'env', settingsPath)[AGENT_LOCK_ENV] = claudeAgentLock(options);
    if ('project' in scope) addMissing(arrayAt(obj, 'enabledMcpjsonServers', settingsPath), ['sluice']);
  });
  if (settings) changes.push(settings);

  const mcp = jsonChange(mcpPath, (obj) => {
    const servers = objectAt(obj, 'mcpServers', mcpPath);
    servers.sluice = mcpServerEntry(launcher, agent, store);
  });
  if (mcp) changes.push(mcp);

  notes.push(
    `hooks: SessionStart and UserPromptSubmit run sluice hook claude … --as ${agent} (${settingsPath})`,
  );
  notes.push(
    options.wake === false
      ? 'wake: not installed (--no-wake): an idle session hears new mail only at its next prompt'
      : `wake: SessionStart and Stop run sluice wait --as ${agent} --for claude --hook (asyncRewake, timeout ${WAKE_HOOK_TIMEOUT_S} s): an idle interactive session is woken when mail arrives; claude -p runs are not held`,
  );
  notes.push(`MCP server "sluice" runs sluice mcp --as ${agent} (${mcpPath})`);
  notes.push(
    `permissions.allow ${addedRules.length > 0 ? 'now has' : 'already had'}: ${allowRules.join(', ')} — the model runs sluice message … and the sluice MCP tools without a prompt`,
  );
  notes.push(
    `env.${AGENT_LOCK_ENV} locks the sluice the model runs to agent ${agent} on this store${'project' in scope ? `; --attach reads only from ${scope.project}` : '; --attach reads only materialised copies'}`,
  );
  return { changes, notes };
}
