// `sluice hooks uninstall claude|codex`: takes out of the client's files what `hooks install`
// puts there — the delivery hooks, the wake, the Sluice permission rules, the agent lock, the
// `sluice` MCP server — and nothing else. Files are edited like the installer does (parse, change,
// write only when something changed); a file the installer would refuse is refused here too.
import { join } from 'node:path';
import {
  type ClaudeScope,
  claudeTargets,
  jsonEdit,
  removeClaudeSettingsEntries,
  removeLocalSluiceServer,
  removeSluiceServer,
} from './claude-files.js';
import { parseCodexConfig } from './codex-toml.js';
import { withoutSluiceTables } from './install-codex.js';
import { changeFor, type FileChange, type InstallPlan, readTextIfExists } from './install-files.js';
import { isSluiceEntry, removeHookEntries } from './install-hook-entries.js';

/**
 * Plans `hooks uninstall claude` for a project or the user's settings: Sluice's entries go from
 * every file an install (this version or an older one) writes; a settings or `.mcp.json` file left
 * holding nothing is deleted, and a project's `.claude` folder when that leaves it empty.
 */
export function planClaudeUninstall(scope: ClaudeScope): InstallPlan {
  const targets = claudeTargets(scope);
  const edits: (FileChange | null)[] = [
    jsonEdit(targets.settings, removeClaudeSettingsEntries, {
      deleteWhenEmpty: true,
      pruneDir: targets.pruneDir,
    }),
    jsonEdit(
      targets.mcpFile,
      (obj) =>
        targets.mcpProject === undefined
          ? removeSluiceServer(obj)
          : removeLocalSluiceServer(obj, targets.mcpProject),
      { deleteWhenEmpty: true },
    ),
  ];
  if (targets.legacy) {
    edits.push(
      jsonEdit(targets.legacy.settings, removeClaudeSettingsEntries, {
        deleteWhenEmpty: true,
        pruneDir: targets.pruneDir,
      }),
      jsonEdit(targets.legacy.mcp, removeSluiceServer, { deleteWhenEmpty: true }),
    );
  }
  return { changes: edits.filter((c): c is FileChange => c !== null), notes: [] };
}

/**
 * Plans `hooks uninstall codex` for a Codex folder (`$CODEX_HOME`, `~/.codex` or `<project>/.codex`);
 * a file left empty is deleted, and the folder too when `pruneDir` (a project's `.codex`) and empty.
 */
export function planCodexUninstall(codexDir: string, pruneDir = false): InstallPlan {
  const configPath = join(codexDir, 'config.toml');
  const hooksPath = join(codexDir, 'hooks.json');
  const prune = pruneDir ? { pruneDir: codexDir } : {};
  const changes: FileChange[] = [];
  const configBefore = readTextIfExists(configPath);
  if (configBefore !== null) {
    // An invalid file is refused naming its line, never rewritten.
    parseCodexConfig(configBefore, configPath);
    const kept = withoutSluiceTables(configBefore, configPath).trimEnd();
    if (kept.trimEnd() !== configBefore.trimEnd()) {
      const change =
        kept === ''
          ? { path: configPath, before: configBefore, after: null, ...prune }
          : changeFor(configPath, configBefore, `${kept}\n`);
      if (change) changes.push(change);
    }
  }
  const hooks = jsonEdit(hooksPath, (obj) => removeHookEntries(obj, isSluiceEntry), {
    deleteWhenEmpty: true,
    pruneDir: pruneDir ? codexDir : undefined,
  });
  if (hooks) changes.push(hooks);
  return {
    changes,
    notes: [
      'Codex keeps its trust records ([hooks.state."…"] in config.toml) for hooks that are gone; they are harmless',
    ],
  };
}
