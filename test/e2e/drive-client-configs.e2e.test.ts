// `sluice drive` on the user's client as it is configured (issue 22 item 3), with the REAL clients
// against the scripted model server: a minimal config (what a fresh install has) and a full one
// (the settings users commonly have, including a sluice MCP server of their own for another agent
// on another store). Each turn proves two things at once: the driver works (the model's MCP reply
// lands as this agent, the turn settles ok) and the agent lock holds (the model's shell cannot
// read the Sluice database). Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/drive-client-configs.e2e.test.ts

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { setApprovalPolicy } from '../../src/host/approvals/policy.js';
import {
  type DriveHome,
  envelopeIds,
  envelopesIn,
  openDriveHome,
  startDriver,
} from '../drivers/drive-harness.js';
import { runCli, SLUICE_BIN } from '../support/host.js';
import { ensureClients } from './support/clients.js';
import {
  type ModelServer,
  type RecordedRequest,
  shellCall,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';
import {
  CODEX_KEY_ENV,
  CODEX_MODEL,
  CODEX_PROVIDER_ID,
  codexEnv,
  makeCodexHome,
} from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';
const ECHO_MCP = join(import.meta.dirname, 'support', 'fixtures', 'echo-mcp-server.mjs');

/** The only lines a Codex user must have to reach a model: the model and its provider. */
function minimalCodexToml(server: ModelServer): string {
  return [
    `model = ${JSON.stringify(CODEX_MODEL)}`,
    `model_provider = ${JSON.stringify(CODEX_PROVIDER_ID)}`,
    '',
    `[model_providers.${CODEX_PROVIDER_ID}]`,
    'name = "Sluice scripted model"',
    `base_url = ${JSON.stringify(server.openaiBaseUrl)}`,
    'wire_api = "responses"',
    `env_key = ${JSON.stringify(CODEX_KEY_ENV)}`,
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n');
}

/**
 * Settings Codex users commonly have: their own sandbox and approval choice, their own permission
 * profiles with a default, network for the workspace sandbox, a shell environment policy, an MCP
 * server of their own, and the `[mcp_servers.sluice]` table `sluice hooks install codex` writes —
 * for another agent on another store (the driver must replace it, not merge into it).
 */
function fullCodexToml(server: ModelServer, otherStore: string): string {
  const top = [
    'sandbox_mode = "danger-full-access"',
    'approval_policy = "on-request"',
    'default_permissions = "dev"',
    'model_reasoning_effort = "low"',
    'check_for_update_on_startup = false',
    'notify = ["/bin/true"]',
  ].join('\n');
  return [
    top,
    minimalCodexToml(server),
    '[permissions.dev]',
    'extends = ":workspace"',
    '',
    '[sandbox_workspace_write]',
    'network_access = true',
    '',
    '[shell_environment_policy]',
    'inherit = "core"',
    '',
    '[mcp_servers.tools]',
    `command = ${JSON.stringify(process.execPath)}`,
    `args = [${JSON.stringify(ECHO_MCP)}]`,
    '',
    '[mcp_servers.sluice]',
    `command = ${JSON.stringify(process.execPath)}`,
    `args = [${JSON.stringify(SLUICE_BIN)}, "mcp", "--as", "alice"]`,
    'enabled = false',
    'disabled_tools = ["message_reply"]',
    '',
    '[mcp_servers.sluice.env]',
    `SLUICE_HOME = ${JSON.stringify(otherStore)}`,
    `SLUICE_DB = ${JSON.stringify(join(otherStore, 'other.db'))}`,
    '',
    '[analytics]',
    'enabled = false',
    '',
  ].join('\n');
}

describe.skipIf(!enabled)('sluice drive on the user’s own client config (real clients)', () => {
  let server: ModelServer;
  let bins: { claude: string; codex: string };
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    bins = await ensureClients();
    // Another codex build to check against (the minimum in docs/drivers.md was run this way).
    if (process.env.SLUICE_E2E_CODEX_BIN) bins = { ...bins, codex: process.env.SLUICE_E2E_CODEX_BIN };
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /**
   * One turn: the model tries to read the database from its shell, then replies with the sluice
   * MCP tool and archives. Returns what the shell printed and the stored reply.
   */
  async function lockedTurn(h: DriveHome, client: 'claude' | 'codex', cwd: string, env: NodeJS.ProcessEnv) {
    const db = join(h.home, 'sluice.db');
    // Claude asks a person before a command outside its allow-list (docs/approvals.md); here the
    // agent's policy refuses unasked, as drivers did before approvals, so the read stays denied.
    if (client === 'claude') await setApprovalPolicy(h.ctx, h.owner, h.agent.name, { ask: 'deny' });
    const id = await h.send('please confirm');
    server.reset((req: RecordedRequest) => {
      const done = toolResults(req).length;
      if (done === 0) {
        const call = shellCall(req, `head -c 16 '${db}'`);
        if (call.name === 'exec_command') call.input = { ...(call.input as object), yield_time_ms: 30_000 };
        return { toolCalls: [call] };
      }
      if (done === 1) {
        const message = envelopeIds(envelopesIn(req).at(-1) ?? '')[0] ?? id;
        return {
          toolCalls: [
            {
              name: 'mcp__sluice__message_reply',
              input: { message_id: message, body: 'on it', archive: true },
            },
          ],
        };
      }
      return { text: 'done' };
    });
    const d = startDriver(client, ['--as', h.agent.name, '--cwd', cwd], env);
    cleanups.push(() => d.stop());
    // A driver that exits fails the test at once, with what it printed.
    await Promise.race([
      d.waitForOutput(/ ok: 1 delivered/, 150_000),
      d.exited.then(({ code }) => {
        throw new Error(`sluice drive ${client} exited ${code}: ${d.stderr()}`);
      }),
    ]);
    await d.stop();
    const outputs = toolResults(server.mainCalls().at(-1) as RecordedRequest).map((r) => r.text);
    const reply = await h.ctx.store.db
      .selectFrom('messages')
      .select(['body', 'author_id'])
      .where('reply_to', '=', id)
      .executeTakeFirst();
    return {
      shell: outputs[0] ?? '(no output)',
      mcp: outputs[1] ?? '(no output)',
      reply,
      id,
      stderr: d.stderr(),
    };
  }

  async function home(): Promise<DriveHome> {
    const h = await openDriveHome();
    cleanups.push(() => h.close());
    return h;
  }

  function codexHome(toml: string) {
    const c = makeCodexHome({ server });
    writeFileSync(join(c.codexHome, 'config.toml'), toml);
    cleanups.push(() => rmSync(c.root, { recursive: true, force: true }));
    return c;
  }

  test('codex with a minimal config.toml (no sandbox_mode, no default_permissions): the turn runs, the shell cannot read the store', async () => {
    const h = await home();
    const c = codexHome(minimalCodexToml(server));
    const env = codexEnv(c, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: bins.codex });
    const r = await lockedTurn(h, 'codex', c.cwd, env);
    expect(r.shell).not.toContain('SQLite format');
    expect(r.shell).toMatch(/Permission denied|No such file/);
    expect(r.reply, r.mcp).toEqual({ body: 'on it', author_id: h.agent.id });
    expect(await h.states()).toEqual([{ id: r.id, state: 'archived', failure_kind: null }]);
  }, 240_000);

  test('codex with a full config.toml (own sandbox, approvals, permission profiles, MCP servers, a sluice server for another agent and store): the driver’s settings win', async () => {
    const h = await home();
    const other = join(h.home, '..', `${h.home.split('/').at(-1)}-other`);
    mkdirSync(other, { recursive: true });
    cleanups.push(() => rmSync(other, { recursive: true, force: true }));
    const c = codexHome(fullCodexToml(server, other));
    const env = codexEnv(c, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: bins.codex });
    const r = await lockedTurn(h, 'codex', c.cwd, env);
    expect(r.shell).not.toContain('SQLite format');
    expect(r.shell).toMatch(/Permission denied|No such file/);
    expect(r.reply, r.mcp).toEqual({ body: 'on it', author_id: h.agent.id });
    expect(await h.states()).toEqual([{ id: r.id, state: 'archived', failure_kind: null }]);
  }, 240_000);

  /** Runs the driver expecting it to stop at start: its exit code and stderr. */
  async function failedStart(
    h: DriveHome,
    client: 'claude' | 'codex',
    args: string[],
    env: NodeJS.ProcessEnv,
  ) {
    const d = startDriver(client, ['--as', h.agent.name, ...args], env);
    cleanups.push(() => d.stop());
    const { code } = await d.exited;
    return { code, stderr: d.stderr() };
  }

  test('codex with --sandbox danger-full-access and a minimal config.toml: the turn runs (no profile is defined)', async () => {
    const h = await home();
    const c = codexHome(minimalCodexToml(server));
    const env = codexEnv(c, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: bins.codex });
    server.reset(() => ({ text: 'seen' }));
    const id = await h.send('hello');
    const d = startDriver(
      'codex',
      ['--as', h.agent.name, '--cwd', c.cwd, '--sandbox', 'danger-full-access'],
      env,
    );
    cleanups.push(() => d.stop());
    await Promise.race([
      d.waitForOutput(/ ok: 1 delivered/, 150_000),
      d.exited.then(({ code }) => {
        throw new Error(`sluice drive codex exited ${code}: ${d.stderr()}`);
      }),
    ]);
    expect(await h.states()).toEqual([{ id, state: 'handled', failure_kind: null }]);
  }, 240_000);

  test('a codex that exits at start is reported with its own stderr line (unavailable, exit 1), never as a bug', async () => {
    const h = await home();
    const c = codexHome(minimalCodexToml(server));
    const missing = join(c.root, 'no-such-codex-home');
    const env = codexEnv(c, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: bins.codex, CODEX_HOME: missing });
    const r = await failedStart(h, 'codex', ['--cwd', c.cwd], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `sluice: unavailable: codex app-server exited (code 1): Error: CODEX_HOME points to "${missing}", but that path does not exist\n`,
    );
  }, 120_000);

  test('a config.toml the real codex refuses is reported with codex’s own reason; nothing is consumed', async () => {
    const h = await home();
    const id = await h.send('wait for a working client');
    const c = codexHome(`sandbox_mode = "bogus"\n${minimalCodexToml(server)}`);
    const env = codexEnv(c, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: bins.codex });
    const r = await failedStart(h, 'codex', ['--cwd', c.cwd], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^sluice: unavailable: codex app-server refused config\/read: invalid configuration: unknown variant `bogus`, expected one of .* in `sandbox_mode`\s*\n$/,
    );
    expect(await h.states()).toEqual([{ id, state: 'waiting', failure_kind: null }]);
  }, 120_000);

  test('a user profile named sluice_agent (here with network) is refused: the driver will not run the agent on a widened sandbox', async () => {
    const h = await home();
    const c = codexHome(
      `${minimalCodexToml(server)}\n[permissions.sluice_agent]\nextends = ":workspace"\n\n[permissions.sluice_agent.network]\nenabled = true\n`,
    );
    const env = codexEnv(c, { SLUICE_HOME: h.home, SLUICE_CODEX_BIN: bins.codex });
    const r = await failedStart(h, 'codex', ['--cwd', c.cwd], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "sluice: denied: sluice drive codex: your Codex config defines [permissions.sluice_agent], the profile the driver owns (it would widen the agent's sandbox): rename yours\n",
    );
  }, 120_000);

  /** A Claude config folder with nothing in it: no settings.json, no .claude.json (a fresh install). */
  function bareClaudeHome() {
    const c = makeClaudeHome();
    rmSync(join(c.configDir, '.claude.json'));
    rmSync(join(c.home, '.claude.json'));
    cleanups.push(() => rmSync(c.root, { recursive: true, force: true }));
    return c;
  }

  test('claude with a bare config folder (no settings, no onboarding state): the turn runs, the shell cannot read the store unasked', async () => {
    const h = await home();
    const c = bareClaudeHome();
    const env = claudeEnv(server, c, { env: { SLUICE_HOME: h.home, SLUICE_CLAUDE_BIN: bins.claude } });
    const r = await lockedTurn(h, 'claude', c.cwd, env);
    expect(r.shell).not.toContain('SQLite format');
    expect(r.reply, r.mcp).toEqual({ body: 'on it', author_id: h.agent.id });
    expect(await h.states()).toEqual([{ id: r.id, state: 'archived', failure_kind: null }]);
  }, 240_000);

  test('claude with a full user config (defaultMode bypassPermissions, own rules, env and MCP server, and sluice hooks installed user-wide for another agent on another store): the driver’s lock and server win', async () => {
    const h = await home();
    const c = bareClaudeHome();
    const other = join(c.root, 'other-sluice');
    const otherEnv = { SLUICE_HOME: other, CLAUDE_CONFIG_DIR: c.configDir, HOME: c.home };
    const cli = async (args: string[]) => {
      const r = await runCli(args, { home: other, env: otherEnv });
      expect(r.code, r.stderr).toBe(0);
    };
    await cli(['init']);
    await cli(['agent', 'add', 'alice']);
    const aliceMail = await runCli(['message', 'send', 'alice', '-m', 'for alice only'], {
      home: other,
      env: otherEnv,
    });
    expect(aliceMail.code, aliceMail.stderr).toBe(0);
    await cli(['hooks', 'install', 'claude', '--user', '--as', 'alice']);
    // The user's own settings on top of what the installer merged in.
    const settingsPath = join(c.configDir, 'settings.json');
    const settings = JSON.parse(readFileSync(settingsPath, 'utf8'));
    settings.permissions = {
      ...settings.permissions,
      defaultMode: 'bypassPermissions',
      allow: [...(settings.permissions?.allow ?? []), 'Bash(npm test:*)'],
      deny: ['Read(./.env)'],
    };
    settings.env = { ...settings.env, USER_SETTING: '1' };
    settings.includeCoAuthoredBy = false;
    writeFileSync(settingsPath, JSON.stringify(settings, null, 2));
    const globalPath = join(c.configDir, '.claude.json');
    const global = JSON.parse(readFileSync(globalPath, 'utf8'));
    global.mcpServers = {
      ...global.mcpServers,
      tools: { type: 'stdio', command: process.execPath, args: [ECHO_MCP] },
    };
    writeFileSync(globalPath, JSON.stringify(global, null, 2));

    const env = claudeEnv(server, c, { env: { SLUICE_HOME: h.home, SLUICE_CLAUDE_BIN: bins.claude } });
    const r = await lockedTurn(h, 'claude', c.cwd, env);
    expect(r.shell).not.toContain('SQLite format');
    expect(r.reply, r.mcp).toEqual({ body: 'on it', author_id: h.agent.id });
    expect(await h.states()).toEqual([{ id: r.id, state: 'archived', failure_kind: null }]);
    // Alice's hooks never delivered her mail into bot's session.
    const seen = server.mainCalls().map((q) => JSON.stringify(q.body));
    expect(seen.some((b) => b.includes('for alice only'))).toBe(false);
  }, 240_000);
});
