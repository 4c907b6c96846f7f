// Run the real Codex CLI headless (`codex exec`, `codex app-server`) against the scripted
// model server, in a throwaway CODEX_HOME.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureClients } from './clients.js';
import type { ModelServer } from './model-server.js';
import { baseEnv, type LineProcess, type RunResult, runBounded, startLineProcess } from './proc.js';

export const CODEX_PROVIDER_ID = 'sluicetest';
export const CODEX_MODEL = 'gpt-5.1-codex';
export const CODEX_KEY_ENV = 'SLUICE_TEST_OPENAI_KEY';

export interface CodexMcpServer {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  /** Seconds (Codex default 10 / 60). */
  startup_timeout_sec?: number;
  tool_timeout_sec?: number;
  /**
   * Codex starts MCP servers alongside the first model request and offers a server's tools only
   * once it is up; `required` makes it wait for this server (and fail if it cannot start).
   */
  required?: boolean;
}

export interface CodexHomeOptions {
  server: ModelServer | string;
  /** [mcp_servers.<name>] entries. */
  mcpServers?: Record<string, CodexMcpServer>;
  /** Written to $CODEX_HOME/hooks.json as {hooks: …}; e.g. {UserPromptSubmit:[{hooks:[{type:'command',command:'…'}]}]} */
  hooks?: Record<string, unknown>;
  /** Raw TOML appended to config.toml. */
  extraToml?: string;
  model?: string;
}

export interface CodexHome {
  root: string;
  /** $HOME for the client. */
  home: string;
  /** $CODEX_HOME (holds config.toml, hooks.json, sessions/). */
  codexHome: string;
  /** Scratch working directory (cwd / -C). */
  cwd: string;
  configToml: string;
}

const q = (s: string) => JSON.stringify(s); // TOML basic strings accept JSON string escapes

export function codexConfigToml(opts: CodexHomeOptions, cwd: string): string {
  const baseUrl = typeof opts.server === 'string' ? opts.server : opts.server.openaiBaseUrl;
  const lines = [
    `model = ${q(opts.model ?? CODEX_MODEL)}`,
    `model_provider = ${q(CODEX_PROVIDER_ID)}`,
    'approval_policy = "never"',
    'sandbox_mode = "danger-full-access"',
    'check_for_update_on_startup = false',
    'model_reasoning_effort = "low"',
    '',
    `[model_providers.${CODEX_PROVIDER_ID}]`,
    'name = "Sluice scripted model"',
    `base_url = ${q(baseUrl)}`,
    'wire_api = "responses"',
    `env_key = ${q(CODEX_KEY_ENV)}`,
    'request_max_retries = 0',
    'stream_max_retries = 0',
    'stream_idle_timeout_ms = 60000',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    `[projects.${q(cwd)}]`,
    'trust_level = "trusted"',
    '',
  ];
  for (const [name, s] of Object.entries(opts.mcpServers ?? {})) {
    lines.push(
      `[mcp_servers.${name}]`,
      `command = ${q(s.command)}`,
      `args = [${(s.args ?? []).map(q).join(', ')}]`,
    );
    if (s.startup_timeout_sec !== undefined) lines.push(`startup_timeout_sec = ${s.startup_timeout_sec}`);
    if (s.tool_timeout_sec !== undefined) lines.push(`tool_timeout_sec = ${s.tool_timeout_sec}`);
    if (s.required !== undefined) lines.push(`required = ${s.required}`);
    if (s.env) {
      lines.push(`[mcp_servers.${name}.env]`);
      for (const [k, v] of Object.entries(s.env)) lines.push(`${k} = ${q(v)}`);
    }
    lines.push('');
  }
  if (opts.extraToml) lines.push(opts.extraToml, '');
  return lines.join('\n');
}

export function makeCodexHome(opts: CodexHomeOptions, prefix = 'sluice-codex-'): CodexHome {
  // Not under /tmp directly: codex refuses to create its PATH helper aliases under a temp dir
  // (harmless warning), so keep the layout but tolerate it.
  const root = mkdtempSync(join(tmpdir(), prefix));
  const home = join(root, 'home');
  const codexHome = join(home, '.codex');
  const cwd = join(root, 'work');
  mkdirSync(codexHome, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const configToml = codexConfigToml(opts, cwd);
  writeFileSync(join(codexHome, 'config.toml'), configToml);
  if (opts.hooks)
    writeFileSync(join(codexHome, 'hooks.json'), JSON.stringify({ hooks: opts.hooks }, null, 2));
  return { root, home, codexHome, cwd, configToml };
}

export function codexEnv(h: CodexHome, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return baseEnv(h.home, {
    CODEX_HOME: h.codexHome,
    [CODEX_KEY_ENV]: 'sk-test-dummy',
    RUST_LOG: 'error',
    ...extra,
  });
}

export interface CodexRunOptions extends CodexHomeOptions {
  prompt: string;
  home?: CodexHome;
  /** -i/--image files attached to the prompt. */
  images?: string[];
  args?: string[];
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
}

export interface CodexRunResult extends RunResult {
  home: CodexHome;
  args: string[];
  /** `--json` JSONL events. */
  events: any[];
  /** Text of the final agent message (from -o). */
  lastMessage: string | undefined;
}

/** `codex exec --json` one-shot run. Hooks run with --dangerously-bypass-hook-trust. */
export async function runCodex(opts: CodexRunOptions): Promise<CodexRunResult> {
  const { codex } = await ensureClients();
  const home = opts.home ?? makeCodexHome(opts);
  const lastFile = join(home.root, 'last-message.txt');
  const args = [
    'exec',
    '--json',
    '--skip-git-repo-check',
    '--ephemeral',
    '--dangerously-bypass-approvals-and-sandbox',
    '--dangerously-bypass-hook-trust',
    '-C',
    home.cwd,
    '-o',
    lastFile,
  ];
  for (const img of opts.images ?? []) args.push('-i', img);
  if (opts.args) args.push(...opts.args);
  args.push('--', opts.prompt);
  const r = await runBounded(codex, args, {
    cwd: home.cwd,
    env: codexEnv(home, opts.env),
    timeoutMs: opts.timeoutMs ?? 90_000,
  });
  const events: any[] = [];
  for (const line of r.stdout.split('\n')) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line));
    } catch {
      events.push({ _raw: line });
    }
  }
  let lastMessage: string | undefined;
  try {
    lastMessage = (await import('node:fs')).readFileSync(lastFile, 'utf8');
  } catch {
    lastMessage = undefined;
  }
  return { ...r, home, args, events, lastMessage };
}

export interface AppServer extends LineProcess {
  home: CodexHome;
  /** JSON-RPC request (no "jsonrpc" member on this wire); rejects on an error response. */
  request(method: string, params?: unknown, timeoutMs?: number): Promise<any>;
  notify(method: string, params?: unknown): void;
  /** Notifications received so far (lines with `method` and no `id`). */
  notifications(): any[];
  /** Wait for a notification by method (and optional predicate). */
  waitNotification(method: string, pred?: (params: any) => boolean, timeoutMs?: number): Promise<any>;
  /** initialize + initialized (experimentalApi on by default). */
  initialize(experimentalApi?: boolean): Promise<any>;
}

/** Spawn `codex app-server` (stdio JSONL JSON-RPC). */
export async function startCodexAppServer(
  opts: CodexHomeOptions & {
    home?: CodexHome;
    args?: string[];
    env?: Record<string, string | undefined>;
    hardTimeoutMs?: number;
  },
): Promise<AppServer> {
  const { codex } = await ensureClients();
  const home = opts.home ?? makeCodexHome(opts);
  const p = startLineProcess(codex, ['app-server', ...(opts.args ?? [])], {
    cwd: home.cwd,
    env: codexEnv(home, opts.env),
    hardTimeoutMs: opts.hardTimeoutMs ?? 180_000,
  });
  let nextId = 1;
  const api: AppServer = {
    ...p,
    home,
    async request(method, params, timeoutMs = 60_000) {
      const id = nextId++;
      p.write({ id, method, params: params ?? {} });
      const resp = await p.waitFor(
        (l) => l.id === id && (l.result !== undefined || l.error !== undefined),
        timeoutMs,
      );
      if (resp.error)
        throw Object.assign(new Error(`${method}: ${JSON.stringify(resp.error)}`), { rpcError: resp.error });
      return resp.result;
    },
    notify(method, params) {
      p.write(params === undefined ? { method } : { method, params });
    },
    notifications: () => p.lines.filter((l) => typeof l.method === 'string' && l.id === undefined),
    waitNotification(method, pred = () => true, timeoutMs = 60_000) {
      return p
        .waitFor((l) => l.method === method && l.id === undefined && pred(l.params), timeoutMs)
        .then((l) => l.params);
    },
    async initialize(experimentalApi = true) {
      const r = await api.request('initialize', {
        clientInfo: { name: 'sluice-e2e', title: 'Sluice e2e', version: '0.1.0' },
        capabilities: { experimentalApi, requestAttestation: false },
      });
      api.notify('initialized');
      return r;
    },
  };
  return api;
}

/**
 * Codex runs a configured hook only once it is trusted (`codex exec` can skip that with
 * --dangerously-bypass-hook-trust; app-server cannot). Trust is stored in config.toml as
 * `[hooks.state."<key>"] trusted_hash = "<currentHash>"`, with key and hash taken from the
 * app-server's `hooks/list` (never compute the hash yourself). Returns the trusted keys.
 */
export async function trustCodexHooks(home: CodexHome): Promise<string[]> {
  const app = await startCodexAppServer({ server: 'http://127.0.0.1:9/v1', home });
  let hooks: any[];
  try {
    await app.initialize(true);
    const listed = await app.request('hooks/list', { cwds: [home.cwd] });
    hooks = (listed.data as any[]).flatMap((d) => d.hooks);
  } finally {
    await app.close();
  }
  const toml = hooks
    .filter((h) => h.trustStatus !== 'trusted' && h.trustStatus !== 'managed')
    .map((h) => `\n[hooks.state.${q(h.key)}]\ntrusted_hash = ${q(h.currentHash)}\n`)
    .join('');
  const { appendFileSync } = await import('node:fs');
  appendFileSync(join(home.codexHome, 'config.toml'), toml);
  return hooks.map((h) => h.key);
}
