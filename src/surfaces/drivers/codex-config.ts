import { SluiceError } from '../../core/errors.js';
import type { DriverSetup } from './setup.js';

/**
 * The permission profile the model's shell runs under (workspace-write): Codex's `:workspace`
 * with the Sluice home denied for reads and writes, so a command can neither read other inboxes
 * from the database nor alter it; the agent's inbox work goes through the MCP server, which runs
 * outside the sandbox as this agent (DESIGN.md §8 I8).
 */
export const CODEX_PERMISSION_PROFILE = 'sluice_agent';

export type CodexSandbox = 'workspace-write' | 'danger-full-access';

/**
 * The `[mcp_servers.sluice]` key and value that approve the sluice tools up front, for the driver
 * and for `sluice hooks install codex` alike. The tools act only as the agent the server runs as;
 * without it Codex asks for each call, and under approval policy "never" (the driver's, and
 * `codex exec`'s default) a call that would ask is refused, so the agent could not reply at all.
 */
export const CODEX_SLUICE_TOOLS_APPROVAL = { key: 'default_tools_approval_mode', value: 'approve' } as const;

/** TOML literal for a `-c key=value` override (JSON strings and arrays are valid TOML). */
function toml(value: string | string[] | Record<string, string>): string {
  if (typeof value === 'string' || Array.isArray(value)) return JSON.stringify(value);
  return `{ ${Object.entries(value)
    .map(([k, v]) => `${JSON.stringify(k)} = ${JSON.stringify(v)}`)
    .join(', ')} }`;
}

/**
 * The sluice MCP server's environment. Codex merges `-c` tables into the user's own (a
 * `[mcp_servers.sluice.env]` that `sluice hooks install codex` wrote for another agent or store
 * would keep its keys), so every variable that picks the store or the actor is set: `SLUICE_DB`
 * too, the home's own SQLite file by its path (prepareDriver).
 */
export function codexMcpEnv(setup: DriverSetup): Record<string, string> {
  return { ...setup.mcp.env };
}

/** The profile's filesystem rules: the Sluice home denied. */
function profileFilesystem(setup: DriverSetup): Record<string, string> {
  return { [setup.home]: 'deny' };
}

/**
 * `codex app-server` with the sluice MCP server and (under workspace-write) the permission profile
 * set through `-c` overrides. Overrides, not edits: the user's config.toml is never written, and
 * the session-flag layer wins over every file layer.
 */
export function codexArgs(setup: DriverSetup, sandbox: CodexSandbox = 'workspace-write'): string[] {
  const args = [
    'app-server',
    '-c',
    `mcp_servers.sluice.command=${toml(setup.mcp.command)}`,
    '-c',
    `mcp_servers.sluice.args=${toml(setup.mcp.args)}`,
    '-c',
    `mcp_servers.sluice.env=${toml(codexMcpEnv(setup))}`,
    // A user's own [mcp_servers.sluice] may disable the server or some of its tools.
    '-c',
    'mcp_servers.sluice.enabled=true',
    '-c',
    'mcp_servers.sluice.disabled_tools=[]',
    // The sluice tools act only as this agent (the server runs outside the sandbox with --as), so
    // they are approved up front; Codex would otherwise ask, and an unattended driver says no.
    '-c',
    `mcp_servers.sluice.${CODEX_SLUICE_TOOLS_APPROVAL.key}=${toml(CODEX_SLUICE_TOOLS_APPROVAL.value)}`,
    // Start the turn only once the server is up, so the first model call already has the tools.
    '-c',
    'mcp_servers.sluice.required=true',
    // A login shell re-reads /etc/profile, which resets PATH and hides the `sluice` shim.
    '-c',
    'allow_login_shell=false',
  ];
  if (sandbox === 'workspace-write') {
    args.push(
      '-c',
      `permissions.${CODEX_PERMISSION_PROFILE}.extends=":workspace"`,
      '-c',
      `permissions.${CODEX_PERMISSION_PROFILE}.filesystem=${toml(profileFilesystem(setup))}`,
      // Codex refuses to load a config that defines [permissions] profiles and names no default
      // ("config defines `[permissions]` profiles but does not set `default_permissions`"), which
      // is every config that does not set sandbox_mode. Naming ours as the default also makes
      // this layer choose profiles over a sandbox_mode the user set.
      '-c',
      `default_permissions="${CODEX_PERMISSION_PROFILE}"`,
    );
  }
  return args;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The keys of a config table that are set (Codex reports unset optional keys as null). */
const setKeys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] != null);

/** JSON equality for plain config values (key order ignored, null keys as absent). */
function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b))
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameValue(x, b[i]))
    );
  if (isObject(a) && isObject(b)) {
    const keys = setKeys(a);
    return keys.length === setKeys(b).length && keys.every((k) => sameValue(a[k], b[k]));
  }
  return a === b;
}

/**
 * What is wrong, if anything, with the effective config Codex reports (`config/read`): the
 * overrides merge into the user's tables, so a key only the user's `[mcp_servers.sluice]` or
 * `[permissions.sluice_agent]` sets (an `enabled_tools` list, a network or extra filesystem rule)
 * would survive them. The driver refuses to run rather than run the agent on a changed lock.
 */
export function codexConfigProblem(
  config: unknown,
  setup: DriverSetup,
  sandbox: CodexSandbox,
): string | undefined {
  const root = isObject(config) ? config : {};
  const servers = isObject(root.mcp_servers) ? root.mcp_servers : {};
  const server = isObject(servers.sluice) ? servers.sluice : {};
  const env = isObject(server.env) ? server.env : {};
  const wantEnv = codexMcpEnv(setup);
  const mcpOk =
    server.command === setup.mcp.command &&
    sameValue(server.args, setup.mcp.args) &&
    Object.entries(wantEnv).every(([k, v]) => env[k] === v) &&
    server.enabled !== false &&
    server.enabled_tools == null &&
    server.url == null &&
    (server.disabled_tools == null || sameValue(server.disabled_tools, []));
  if (!mcpOk)
    return 'the effective [mcp_servers.sluice] differs from the driver’s (your config.toml sets a key of it the driver does not override, e.g. enabled_tools or url): remove that table or key';
  if (sandbox !== 'workspace-write') return undefined;
  const profiles = isObject(root.permissions) ? root.permissions : {};
  const want = { extends: ':workspace', filesystem: profileFilesystem(setup) };
  if (!sameValue(profiles[CODEX_PERMISSION_PROFILE], want))
    return `your Codex config defines [permissions.${CODEX_PERMISSION_PROFILE}], the profile the driver owns (it would widen the agent's sandbox): rename yours`;
  return undefined;
}

/** The parts of the `thread/start` answer that show which sandbox the thread runs under. */
export interface CodexThreadStarted {
  thread: { id: string };
  approvalPolicy?: unknown;
  sandbox?: { type?: unknown } | null;
  activePermissionProfile?: { id?: unknown } | null;
}

/**
 * Checks Codex runs the thread as the driver asked (the approval policy; under workspace-write, the
 * sluice_agent profile); otherwise the agent lock would not hold, so the driver stops.
 */
export function requireCodexThread(
  started: CodexThreadStarted,
  sandbox: CodexSandbox,
  approvalPolicy = 'never',
): void {
  const approval = JSON.stringify(started.approvalPolicy);
  if (started.approvalPolicy !== approvalPolicy)
    throw new SluiceError(
      'denied',
      `codex started the thread with approvals ${approval}, not ${JSON.stringify(approvalPolicy)}`,
    );
  if (sandbox !== 'workspace-write') return;
  const active = started.activePermissionProfile?.id;
  if (active !== CODEX_PERMISSION_PROFILE || started.sandbox?.type === 'dangerFullAccess')
    throw new SluiceError(
      'denied',
      `codex started the thread with permission profile ${JSON.stringify(active ?? null)} and sandbox ${JSON.stringify(started.sandbox?.type ?? null)}, not ${CODEX_PERMISSION_PROFILE}: the agent would not be confined, so the driver stops`,
    );
}
