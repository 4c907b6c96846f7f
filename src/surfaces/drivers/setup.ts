import { accessSync, constants, realpathSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { SluiceError } from '../../core/errors.js';
import { shellWord } from '../../core/shell-word.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import { AGENT_LOCK_ENV, encodeAgentLock } from '../cli/agent-lock.js';

/** Which client a driver runs, and the environment variable that may name its binary. */
const CLIENT_ENV = { claude: 'SLUICE_CLAUDE_BIN', codex: 'SLUICE_CODEX_BIN' } as const;

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The client binary: `$SLUICE_CLAUDE_BIN` / `$SLUICE_CODEX_BIN`, else the first one on PATH. */
export function findClientBinary(client: 'claude' | 'codex', env: NodeJS.ProcessEnv = process.env): string {
  const variable = CLIENT_ENV[client];
  const named = env[variable];
  if (named !== undefined && named !== '') {
    if (!isExecutable(named))
      throw new SluiceError('not_found', `${variable} names ${named}, which is not an executable file`);
    return named;
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, client);
    if (isExecutable(candidate)) return candidate;
  }
  const pkg = client === 'claude' ? '@anthropic-ai/claude-code' : '@openai/codex';
  throw new SluiceError('not_found', `${client} is not on PATH: install ${pkg} or set ${variable}`);
}

/** Files and environment a driven client runs with. */
export interface DriverSetup {
  /** `<home>/drivers/<agent>`: the shim and the MCP config (0700). */
  dir: string;
  /** The Sluice home the driver serves (the Codex sandbox denies it to the model's shell). */
  home: string;
  /** JSON `{mcpServers:{sluice:…}}` for `claude --mcp-config`. */
  mcpConfigPath: string;
  /** JSON `{env:{…the lock…}}` for `claude --settings` (wins over the user's own settings' env). */
  settingsPath: string;
  /** How to start `sluice mcp --as AGENT`. */
  mcp: { command: string; args: string[]; env: Record<string, string> };
  /** The client's environment: SLUICE_HOME/SLUICE_AS and the agent lock set, the `sluice` shim first on PATH. */
  env: NodeJS.ProcessEnv;
}

/**
 * Writes `<home>/drivers/<agent>/bin/sluice` (a shim running this very CLI under the agent lock, so
 * `sluice message …` in the model's shell acts on this home as this agent and nothing else) and the
 * MCP config, and builds the env.
 */
export async function prepareDriver(
  ctx: HostContext,
  agent: Principal,
  options: {
    /**
     * The store as `databaseLocation` gives it (from `--db` or `SLUICE_DB`: the flag alone would
     * lose a store the environment named), or undefined for the home's own file.
     */
    db?: string | undefined;
    entry?: string | undefined;
    cwd?: string | undefined;
  } = {},
): Promise<DriverSetup> {
  const entry = options.entry ?? realpathSync(process.argv[1] ?? '');
  const dir = join(ctx.home, 'drivers', agent.name);
  const bin = join(dir, 'bin');
  await mkdir(bin, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  // SLUICE_DB is always written, never empty: the client's own settings, the user's shell or a
  // `[mcp_servers.sluice.env]` from `hooks install` may name another store, and what the driver
  // writes must win over each of them. For the home's own file it is that file's path (what an
  // empty value used to mean, but an empty value reads as "unset" to a person checking it).
  const sluiceEnv: Record<string, string> = {
    SLUICE_HOME: ctx.home,
    SLUICE_AS: agent.name,
    SLUICE_DB: options.db ?? join(ctx.home, 'sluice.db'),
  };
  // The lock (DESIGN.md §8 I8): whatever the model's shell inherits or prefixes, the shim sets it
  // again, so `sluice …` acts as this agent on this store and attaches only from the session's cwd.
  const lock = encodeAgentLock({
    agent: agent.name,
    home: ctx.home,
    db: options.db,
    attachRoots: options.cwd !== undefined ? [options.cwd] : [],
  });
  const lockedEnv: Record<string, string> = { ...sluiceEnv, [AGENT_LOCK_ENV]: lock };
  const exports = Object.entries(lockedEnv)
    .map(([k, v]) => `${k}=${shellWord(v)}; export ${k}`)
    .join('\n');
  const shim = join(bin, 'sluice');
  await writeFile(
    shim,
    `#!/bin/sh\n${exports}\nexec ${shellWord(process.execPath)} ${shellWord(entry)} "$@"\n`,
    { mode: 0o700 },
  );
  await chmod(shim, 0o700);
  const mcp = { command: process.execPath, args: [entry, 'mcp', '--as', agent.name], env: sluiceEnv };
  const mcpConfigPath = join(dir, 'mcp.json');
  await writeFile(mcpConfigPath, JSON.stringify({ mcpServers: { sluice: mcp } }, null, 2), { mode: 0o600 });
  // A user's own settings may carry another agent's lock in `env` and its delivery hooks (`sluice
  // hooks install claude --user --as OTHER` writes both): Claude would apply that lock to the
  // sluice MCP server (refused: no tools) and run those hooks in this session, delivering the other
  // agent's inbox to this one. Settings given with --settings rank above the user's: the driver's
  // lock wins (SLUICE_DB set to this store, so no other store leaks in), and no hook runs — the
  // driver delivers by itself.
  const settingsPath = join(dir, 'settings.json');
  const settings = { env: lockedEnv, disableAllHooks: true };
  await writeFile(settingsPath, JSON.stringify(settings, null, 2), { mode: 0o600 });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...lockedEnv,
    PATH: [bin, process.env.PATH ?? ''].filter((p) => p !== '').join(delimiter),
  };
  return { dir, home: ctx.home, mcpConfigPath, settingsPath, mcp, env };
}
