import { join } from 'node:path';
import { SluiceError } from '../../core/errors.js';
import { CODEX_SLUICE_TOOLS_APPROVAL } from '../drivers/codex-config.js';
import { assertNoPasswordInProject } from './claude-files.js';
import { assertOnlySluiceChanged, inlineServersAsTables, parseCodexConfig } from './codex-toml.js';
import {
  changeFor,
  type FileChange,
  type InstallPlan,
  jsonText,
  parseJsonObject,
  readTextIfExists,
  type SluiceLauncher,
} from './install-files.js';
import { type HookDeliveryMode, mergeSluiceHooks, type StoreLocation } from './install-hook-entries.js';

export interface CodexInstallOptions extends HookDeliveryMode {
  agent: string;
  /** The folder holding config.toml and hooks.json: `$CODEX_HOME`, `~/.codex`, or `<project>/.codex`. */
  codexDir: string;
  /** True when `codexDir` is a project's `.codex` (files others may share: no password there). */
  inProject?: boolean | undefined;
  store: StoreLocation;
  launcher: SluiceLauncher;
}

/** `$CODEX_HOME`, else `~/.codex`. */
export function codexUserDir(env: NodeJS.ProcessEnv, homeDir: string): string {
  return env.CODEX_HOME || join(homeDir, '.codex');
}

/** TOML basic strings accept JSON string escapes, so JSON.stringify quotes a TOML string. */
const tomlString = (s: string) => JSON.stringify(s);

/**
 * The `[mcp_servers.sluice]` table (and its env sub-table) that starts `sluice mcp --as AGENT`,
 * its tools approved up front as the driver does it (`codex exec` refuses a call that would ask).
 */
export function codexMcpBlock(launcher: SluiceLauncher, agent: string, store: StoreLocation): string {
  const lines = [
    '[mcp_servers.sluice]',
    `command = ${tomlString(launcher.node)}`,
    `args = [${[launcher.bin, 'mcp', '--as', agent].map(tomlString).join(', ')}]`,
    `${CODEX_SLUICE_TOOLS_APPROVAL.key} = ${tomlString(CODEX_SLUICE_TOOLS_APPROVAL.value)}`,
    '',
    '[mcp_servers.sluice.env]',
    `SLUICE_HOME = ${tomlString(store.home)}`,
  ];
  if (store.db !== undefined) lines.push(`SLUICE_DB = ${tomlString(store.db)}`);
  return lines.join('\n');
}

const TABLE_HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;
const SLUICE_TABLE = /^mcp_servers\.("sluice"|sluice)(\.|$)/;

/**
 * `config.toml` with the Sluice MCP table replaced or appended, every other line untouched.
 * The file is parsed first: invalid TOML is refused naming its line (nothing written). The edit
 * is line-based (Sluice owns only the `[mcp_servers.sluice]` table and its sub-tables), except
 * that a root-level inline `mcp_servers = { … }` becomes one table per server, since a table
 * cannot extend an inline table. A `sluice` server defined another way (dotted keys, an inline
 * table under `[mcp_servers]`) is refused rather than guessed at, and the result must parse to
 * the user's settings plus the sluice server, or nothing is written.
 */
export function mergeCodexConfig(before: string | null, block: string, path: string): string {
  const meant = before === null ? {} : parseCodexConfig(before, path);
  const text = before === null ? '' : inlineServersAsTables(before, meant);
  const rest = withoutSluiceTables(text, path).trimEnd();
  const merged = `${rest === '' ? '' : `${rest}\n\n`}${block}\n`;
  assertOnlySluiceChanged(meant, merged, block, path);
  return merged;
}

/**
 * `config.toml` without the `[mcp_servers.sluice]` table and its sub-tables, every other line as
 * it was; refuses a `sluice` server written another way (nothing is changed).
 */
export function withoutSluiceTables(before: string | null, path: string): string {
  const lines = (before ?? '').split('\n');
  const kept: string[] = [];
  let inSluice = false;
  for (const line of lines) {
    const header = TABLE_HEADER.exec(line);
    if (header) inSluice = SLUICE_TABLE.test((header[1] as string).replace(/\s+/g, ''));
    if (inSluice) continue;
    if (
      /mcp_servers\s*\.\s*"?sluice"?\b/.test(line.replace(/#.*$/, '')) ||
      /^\s*sluice\s*=\s*\{/.test(line)
    ) {
      throw new SluiceError(
        'invalid_params',
        `${path} defines the sluice MCP server in a form this installer does not edit; move it to a [mcp_servers.sluice] table (nothing was changed)`,
      );
    }
    kept.push(line);
  }
  return kept.join('\n');
}

/**
 * Plans the Codex install: `[mcp_servers.sluice]` in config.toml and the SessionStart +
 * UserPromptSubmit hooks in hooks.json (Codex runs them once trusted; see docs/delivery.md).
 */
export function planCodexInstall(options: CodexInstallOptions): InstallPlan {
  const { agent, codexDir, store, launcher } = options;
  // Codex reads no per-user file for a project: a project's .codex/ gets paths, never a password.
  if (options.inProject) assertNoPasswordInProject(store.db);
  const configPath = join(codexDir, 'config.toml');
  const hooksPath = join(codexDir, 'hooks.json');
  const changes: FileChange[] = [];

  const configBefore = readTextIfExists(configPath);
  const config = changeFor(
    configPath,
    configBefore,
    mergeCodexConfig(configBefore, codexMcpBlock(launcher, agent, store), configPath),
  );
  if (config) changes.push(config);

  const hooksBefore = readTextIfExists(hooksPath);
  const hooksObj = parseJsonObject(hooksBefore, hooksPath);
  const snapshot = JSON.stringify(hooksObj);
  mergeSluiceHooks(hooksObj, launcher, 'codex', agent, store, hooksPath, {}, options);
  if (JSON.stringify(hooksObj) !== snapshot || hooksBefore === null) {
    const hooks = changeFor(hooksPath, hooksBefore, jsonText(hooksObj));
    if (hooks) changes.push(hooks);
  }

  return {
    changes,
    notes: [
      `hooks: SessionStart and UserPromptSubmit run sluice hook codex … --as ${agent} (${hooksPath})`,
      `MCP server "sluice" runs sluice mcp --as ${agent} ([mcp_servers.sluice] in ${configPath})`,
      'Codex runs a new or changed hook only after you trust it: review it in codex with /hooks (codex exec: --dangerously-bypass-hook-trust)',
    ],
  };
}
