// Run the real Claude Code CLI headless against the scripted model server.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureClients } from './clients.js';
import type { ModelServer } from './model-server.js';
import { baseEnv, type LineProcess, type RunResult, runBounded, startLineProcess } from './proc.js';

export interface ClaudeHome {
  /** Temp root holding home/ and work/. */
  root: string;
  /** $HOME for the client. */
  home: string;
  /** $CLAUDE_CONFIG_DIR (= home/.claude). */
  configDir: string;
  /** A scratch working directory (cwd for the run). */
  cwd: string;
}

/** A throwaway HOME + CLAUDE_CONFIG_DIR with onboarding marked done, and a scratch cwd. */
export function makeClaudeHome(prefix = 'sluice-claude-'): ClaudeHome {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const home = join(root, 'home');
  const configDir = join(home, '.claude');
  const cwd = join(root, 'work');
  mkdirSync(configDir, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const globalConfig = {
    hasCompletedOnboarding: true,
    lastOnboardingVersion: '2.1.332',
    numStartups: 1,
    autoUpdates: false,
    bypassPermissionsModeAccepted: true,
    projects: { [cwd]: { hasTrustDialogAccepted: true, allowedTools: [] } },
  };
  // With CLAUDE_CONFIG_DIR set, the global config lives at $CLAUDE_CONFIG_DIR/.claude.json.
  writeFileSync(join(configDir, '.claude.json'), JSON.stringify(globalConfig, null, 2));
  writeFileSync(join(home, '.claude.json'), JSON.stringify(globalConfig, null, 2));
  return { root, home, configDir, cwd };
}

export interface ClaudeEnvOptions {
  /** Override env entries (undefined removes nothing; use for additions). */
  env?: Record<string, string | undefined>;
  /** CLAUDE_CODE_MAX_RETRIES (default 0 so a scripted error surfaces at once). */
  maxRetries?: number;
}

/** Environment for an offline Claude Code run against `server`. */
export function claudeEnv(
  server: ModelServer | string,
  h: ClaudeHome,
  opts: ClaudeEnvOptions = {},
): NodeJS.ProcessEnv {
  const baseUrl = typeof server === 'string' ? server : server.anthropicBaseUrl;
  return baseEnv(h.home, {
    CLAUDE_CONFIG_DIR: h.configDir,
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: 'sk-ant-test-dummy',
    // Stay offline and quiet.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    DISABLE_COST_WARNINGS: '1',
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
    CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
    CLAUDE_CODE_DISABLE_AUTO_MEMORY: '1',
    CLAUDE_CODE_DISABLE_CLAUDE_MDS: '1',
    // Fail fast on scripted model errors.
    CLAUDE_CODE_MAX_RETRIES: String(opts.maxRetries ?? 0),
    API_TIMEOUT_MS: '60000',
    // MCP tools: offer them in `tools` directly (not deferred behind ToolSearch) and connect
    // MCP servers before the first model call (default is fully async → racy first request).
    ENABLE_TOOL_SEARCH: 'false',
    MCP_CONNECTION_NONBLOCKING: 'false',
    // --permission-mode bypassPermissions refuses to run as root unless IS_SANDBOX=1.
    IS_SANDBOX: '1',
    ...opts.env,
  });
}

export interface ClaudeRunOptions extends ClaudeEnvOptions {
  server: ModelServer | string;
  prompt: string;
  home?: ClaudeHome;
  cwd?: string;
  /** Written to a file and passed as --mcp-config (object = {mcpServers:{…}}). */
  mcpConfig?: object;
  /** Written to a file and passed as --settings (e.g. {hooks:{…}}). */
  settings?: object;
  /** --allowedTools (default Bash plus any mcp__ tools you name). */
  allowedTools?: string[];
  /** --permission-mode (default bypassPermissions so tools run without prompts). */
  permissionMode?: 'acceptEdits' | 'bypassPermissions' | 'default' | 'dontAsk' | 'plan';
  /** --output-format (default json). */
  outputFormat?: 'json' | 'stream-json' | 'text';
  args?: string[];
  timeoutMs?: number;
}

export interface ClaudeRunResult extends RunResult {
  home: ClaudeHome;
  args: string[];
  /** Parsed `--output-format json` result, or the `result` event of stream-json. */
  result: any;
  /** All stream-json events (stream-json only). */
  events: any[];
}

function writeJson(dir: string, name: string, obj: object): string {
  const p = join(dir, name);
  writeFileSync(p, JSON.stringify(obj, null, 2));
  return p;
}

export function claudeArgs(
  opts: Omit<ClaudeRunOptions, 'server' | 'prompt'> & { home: ClaudeHome },
): string[] {
  const args: string[] = [];
  if (opts.mcpConfig)
    args.push('--mcp-config', writeJson(opts.home.root, 'mcp.json', opts.mcpConfig), '--strict-mcp-config');
  if (opts.settings) args.push('--settings', writeJson(opts.home.root, 'settings.json', opts.settings));
  if (opts.allowedTools?.length) args.push('--allowedTools', opts.allowedTools.join(','));
  args.push('--permission-mode', opts.permissionMode ?? 'bypassPermissions');
  args.push('--no-session-persistence');
  if (opts.args) args.push(...opts.args);
  return args;
}

/** `claude -p PROMPT --output-format json` (one turn, exits). */
export async function runClaude(opts: ClaudeRunOptions): Promise<ClaudeRunResult> {
  const { claude } = await ensureClients();
  const home = opts.home ?? makeClaudeHome();
  const fmt = opts.outputFormat ?? 'json';
  const args = ['-p', opts.prompt, '--output-format', fmt, ...(fmt === 'stream-json' ? ['--verbose'] : [])];
  args.push(...claudeArgs({ ...opts, home }));
  const r = await runBounded(claude, args, {
    cwd: opts.cwd ?? home.cwd,
    env: claudeEnv(opts.server, home, opts),
    timeoutMs: opts.timeoutMs ?? 90_000,
  });
  let result: any;
  const events: any[] = [];
  if (fmt === 'json') {
    try {
      result = JSON.parse(r.stdout.trim().split('\n').pop() ?? '');
    } catch {
      result = undefined;
    }
  } else if (fmt === 'stream-json') {
    for (const line of r.stdout.split('\n')) {
      if (!line.trim()) continue;
      try {
        events.push(JSON.parse(line));
      } catch {
        events.push({ _raw: line });
      }
    }
    result = events.filter((e) => e.type === 'result').pop();
  } else result = r.stdout;
  return { ...r, home, args, result, events };
}

export interface ClaudeSession extends LineProcess {
  home: ClaudeHome;
  args: string[];
  /** Send one user message (content = string or Anthropic content blocks). */
  sendUser(content: string | unknown[]): void;
  /** Wait for the next `result` event after `fromIndex` lines. */
  nextResult(fromIndex?: number, timeoutMs?: number): Promise<any>;
}

/**
 * A long-lived session: `claude -p --input-format stream-json --output-format stream-json
 * --verbose`. Each stdin line `{"type":"user","message":{"role":"user","content":…}}` is one turn;
 * each turn ends with a `{"type":"result",…}` line.
 */
export async function startClaudeSession(
  opts: Omit<ClaudeRunOptions, 'prompt' | 'outputFormat'> & { hardTimeoutMs?: number },
): Promise<ClaudeSession> {
  const { claude } = await ensureClients();
  const home = opts.home ?? makeClaudeHome();
  const args = ['-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose'];
  args.push(...claudeArgs({ ...opts, home }));
  const p = startLineProcess(claude, args, {
    cwd: opts.cwd ?? home.cwd,
    env: claudeEnv(opts.server, home, opts),
    hardTimeoutMs: opts.hardTimeoutMs ?? 180_000,
  });
  return {
    ...p,
    home,
    args,
    sendUser(content) {
      p.write({ type: 'user', message: { role: 'user', content }, parent_tool_use_id: null, session_id: '' });
    },
    nextResult(fromIndex = 0, timeoutMs = 90_000) {
      return p.waitFor((l) => l.type === 'result', timeoutMs, fromIndex);
    },
  };
}
