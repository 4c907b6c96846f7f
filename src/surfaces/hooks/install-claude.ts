import { join } from 'node:path';
import { AGENT_LOCK_ENV, encodeAgentLock } from '../cli/agent-lock.js';
import {
  assertNoPasswordInProject,
  type ClaudeScope,
  type ClaudeUserPaths,
  claudeTargets,
  jsonEdit,
  removeClaudeSettingsEntries,
  removeSluiceServer,
} from './claude-files.js';
import {
  arrayAt,
  type FileChange,
  type InstallPlan,
  type JsonObject,
  objectAt,
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

export type { ClaudeScope } from './claude-files.js';

export interface ClaudeInstallOptions extends HookDeliveryMode {
  agent: string;
  scope: ClaudeScope;
  store: StoreLocation;
  launcher: SluiceLauncher;
  /** Install the wake (an asyncRewake hook running `sluice wait`); default true (`--no-wake`: false). */
  wake?: boolean | undefined;
}

/** Claude Code's user config folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`; and its global JSON. */
export function claudeUserPaths(env: NodeJS.ProcessEnv, homeDir: string): ClaudeUserPaths {
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

/**
 * Plans the Claude Code install: SessionStart + UserPromptSubmit hooks (and the wake), the
 * permission rules and the agent lock in the settings, and the `sluice` MCP server. A project gets
 * them in its per-user files (`.claude/settings.local.json`, and the server in local scope in the
 * user's `.claude.json`), never in the shared `.claude/settings.json` or `.mcp.json`; Sluice entries
 * an older version wrote there are moved out. The user scope writes `settings.json` in the config
 * folder and `mcpServers` of the global `.claude.json`.
 */
export function planClaudeInstall(options: ClaudeInstallOptions): InstallPlan {
  const { agent, scope, store, launcher } = options;
  if ('project' in scope) assertNoPasswordInProject(store.db);
  const targets = claudeTargets(scope);
  const settingsPath = targets.settings;
  const allowRules = claudeAllowRules(launcher);
  let addedRules: string[] = [];
  const changes: FileChange[] = [];

  const settings = jsonEdit(
    settingsPath,
    (obj) => {
      mergeSluiceHooks(obj, launcher, 'claude', agent, store, settingsPath, { timeout: 10 }, options);
      if (options.wake === false) removeHookEntries(obj, isSluiceWake);
      else mergeSluiceWake(obj, launcher, agent, store, settingsPath);
      const permissions = objectAt(obj, 'permissions', settingsPath);
      addedRules = addMissing(arrayAt(permissions, 'allow', `${settingsPath} permissions`), allowRules);
      // The allow rules above approve `sluice message …` whatever its flags; the lock in the session's
      // environment is what keeps it this agent on this store (DESIGN.md §8 I8).
      objectAt(obj, 'env', settingsPath)[AGENT_LOCK_ENV] = claudeAgentLock(options);
    },
    { createMissing: true },
  );
  if (settings) changes.push(settings);

  const mcp = jsonEdit(
    targets.mcpFile,
    (obj) => {
      const owner =
        targets.mcpProject === undefined
          ? obj
          : objectAt(objectAt(obj, 'projects', targets.mcpFile), targets.mcpProject, targets.mcpFile);
      objectAt(owner, 'mcpServers', targets.mcpFile).sluice = mcpServerEntry(launcher, agent, store);
    },
    { createMissing: true },
  );
  if (mcp) changes.push(mcp);

  // What an older install put into the shared files goes: they are the team's, not this user's.
  const legacy = targets.legacy;
  if (legacy) {
    const oldSettings = jsonEdit(legacy.settings, removeClaudeSettingsEntries, { deleteWhenEmpty: true });
    const oldMcp = jsonEdit(legacy.mcp, removeSluiceServer, { deleteWhenEmpty: true });
    for (const change of [oldSettings, oldMcp]) if (change) changes.push(change);
  }
  return {
    changes,
    notes: installNotes(options, settingsPath, targets.mcpProject, targets.mcpFile, addedRules),
  };
}

function installNotes(
  options: ClaudeInstallOptions,
  settingsPath: string,
  mcpProject: string | undefined,
  mcpFile: string,
  addedRules: readonly string[],
): string[] {
  const { agent, scope, launcher } = options;
  const notes = [
    `hooks: SessionStart and UserPromptSubmit run sluice hook claude … --as ${agent} (${settingsPath})`,
    options.wake === false
      ? 'wake: not installed (--no-wake): an idle session hears new mail only at its next prompt'
      : `wake: SessionStart and Stop run sluice wait --as ${agent} --for claude --hook (asyncRewake, timeout ${WAKE_HOOK_TIMEOUT_S} s): an idle interactive session is woken when mail arrives; claude -p runs are not held`,
    mcpProject === undefined
      ? `MCP server "sluice" runs sluice mcp --as ${agent} (${mcpFile})`
      : `MCP server "sluice" runs sluice mcp --as ${agent} (local scope: projects["${mcpProject}"] in ${mcpFile}, as claude mcp add --scope local writes it)`,
    `permissions.allow ${addedRules.length > 0 ? 'now has' : 'already had'}: ${claudeAllowRules(launcher).join(', ')} — the model runs sluice message … and the sluice MCP tools without a prompt`,
    `env.${AGENT_LOCK_ENV} locks the sluice the model runs to agent ${agent} on this store${'project' in scope ? `; --attach reads only from ${scope.project}` : '; --attach reads only materialised copies'}`,
  ];
  if ('project' in scope) {
    notes.push(
      'these are per-user files (paths, home and database of this machine): .claude/settings.local.json is not for version control; .claude/settings.json and .mcp.json are left to your team',
    );
  }
  return notes;
}
