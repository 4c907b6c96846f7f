// `sluice hooks install claude` installs the wake (asyncRewake hooks running `sluice wait`) unless
// --no-wake, and `sluice hooks uninstall claude|codex` removes exactly what install added.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WAKE_HOOK_TIMEOUT_S } from '../../src/surfaces/hooks/install-hook-entries.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, runCli, SLUICE_BIN, type TestHost } from '../support/host.js';

let host: TestHost;
let scratch: string;
/** The user's Claude config folder ($CLAUDE_CONFIG_DIR) for every run: local MCP entries land there. */
let userConfig: string;
beforeAll(async () => {
  host = await openTestHost();
  await host.agent('bot');
  scratch = mkdtempSync(join(tmpdir(), 'sluice-wake-install-'));
  userConfig = join(scratch, 'user-claude');
  mkdirSync(userConfig);
});
afterAll(async () => {
  await host.close();
  rmSync(scratch, { recursive: true, force: true });
});

function freshDir(name: string): string {
  const dir = join(scratch, `${name}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

// In this process through the CLI's main (runCliHere): what is tested is the files written, which
// the real clients read. One install and one uninstall run the built CLI in a child process.
const cli = (args: string[], env: Record<string, string> = {}) =>
  runCliHere(['hooks', ...args], {
    home: host.home,
    env: { SLUICE_AGENT_LOCK: '', CLAUDE_CONFIG_DIR: userConfig, ...env },
  });
const cliProcess = (args: string[]) =>
  runCli(['hooks', ...args], {
    home: host.home,
    env: { SLUICE_AGENT_LOCK: '', CLAUDE_CONFIG_DIR: userConfig },
  });
const localSettings = (project: string) => join(project, '.claude', 'settings.local.json');
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

const USER_SETTINGS = {
  model: 'sonnet',
  env: { MY_VAR: '1' },
  hooks: {
    SessionStart: [{ matcher: 'startup', hooks: [{ type: 'command', command: 'echo hi' }] }],
    Stop: [{ hooks: [{ type: 'command', command: 'echo stop' }] }],
  },
  permissions: { allow: ['Bash(ls:*)'], deny: ['Bash(rm:*)'] },
  enabledMcpjsonServers: ['mine'],
};
const USER_MCP = { mcpServers: { mine: { command: 'x' } } };

const SHARED_SETTINGS = { model: 'opus', permissions: { allow: ['Bash(npm test:*)'] } };

/** A project with the team's shared files and this user's own local settings. */
function userProject(): string {
  const project = freshDir('claude');
  mkdirSync(join(project, '.claude'));
  writeFileSync(join(project, '.claude', 'settings.json'), JSON.stringify(SHARED_SETTINGS));
  writeFileSync(localSettings(project), JSON.stringify(USER_SETTINGS));
  writeFileSync(join(project, '.mcp.json'), JSON.stringify(USER_MCP));
  return project;
}

const wakeEntries = (settings: { hooks?: Record<string, { hooks: { asyncRewake?: boolean }[] }[]> }) =>
  Object.entries(settings.hooks ?? {}).flatMap(([event, groups]) =>
    groups.flatMap((g) => g.hooks.filter((h) => h.asyncRewake).map((h) => ({ event, ...h }))),
  );

describe('the wake in sluice hooks install claude', () => {
  test('adds an asyncRewake hook running sluice wait on SessionStart and Stop, after the user’s own', async () => {
    const project = userProject();
    const run = await cliProcess(['install', 'claude', '--as', 'bot', '--project', project]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/wake: SessionStart and Stop run sluice wait --as bot --for claude --hook/);
    const settings = readJson(localSettings(project));
    const command = `${process.execPath} ${SLUICE_BIN} wait --as bot --for claude --hook --timeout ${WAKE_HOOK_TIMEOUT_S - 60} --home ${host.home}`;
    expect(wakeEntries(settings)).toEqual([
      { event: 'SessionStart', type: 'command', command, asyncRewake: true, timeout: WAKE_HOOK_TIMEOUT_S },
      { event: 'Stop', type: 'command', command, asyncRewake: true, timeout: WAKE_HOOK_TIMEOUT_S },
    ]);
    expect(settings.hooks.Stop[0]).toEqual(USER_SETTINGS.hooks.Stop[0]);
    expect(settings.hooks.SessionStart[0]).toEqual(USER_SETTINGS.hooks.SessionStart[0]);
    const again = await cli(['install', 'claude', '--as', 'bot', '--project', project]);
    expect(again.stdout).toContain('claude: already installed, nothing to change');
  });

  test('--no-wake leaves the wake out (and takes an earlier one out), the delivery hooks stay', async () => {
    const project = userProject();
    await cli(['install', 'claude', '--as', 'bot', '--project', project]);
    const run = await cli(['install', 'claude', '--as', 'bot', '--project', project, '--no-wake']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('wake: not installed (--no-wake)');
    const settings = readJson(localSettings(project));
    expect(wakeEntries(settings)).toEqual([]);
    expect(settings.hooks.Stop).toEqual(USER_SETTINGS.hooks.Stop);
    expect(JSON.stringify(settings.hooks.UserPromptSubmit)).toContain('hook claude user-prompt-submit');
  });
});

describe('sluice hooks uninstall', () => {
  test('claude: the project’s files hold exactly the user’s settings again, the user’s .claude.json too', async () => {
    const project = userProject();
    const config = freshDir('config');
    const globalBefore = `${JSON.stringify({ numStartups: 2, projects: { '/elsewhere': { mcpServers: {} } } }, null, 2)}\n`;
    writeFileSync(join(config, '.claude.json'), globalBefore);
    const env = { CLAUDE_CONFIG_DIR: config };
    await cli(['install', 'claude', '--as', 'bot', '--project', project], env);
    expect(readFileSync(join(config, '.claude.json'), 'utf8')).toContain('"sluice"');
    const dry = await cli(['uninstall', 'claude', '--project', project, '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('would change (dry run, nothing written)');
    expect(JSON.stringify(readJson(localSettings(project)))).toContain('sluice');

    const run = await runCli(['hooks', 'uninstall', 'claude', '--project', project], {
      home: host.home,
      env: { SLUICE_AGENT_LOCK: '', ...env },
    });
    expect(run.code).toBe(0);
    expect(readJson(localSettings(project))).toEqual(USER_SETTINGS);
    expect(readJson(join(project, '.claude', 'settings.json'))).toEqual(SHARED_SETTINGS);
    expect(readJson(join(project, '.mcp.json'))).toEqual(USER_MCP);
    expect(readFileSync(join(config, '.claude.json'), 'utf8')).toBe(globalBefore);
    const again = await cli(['uninstall', 'claude', '--project', project], env);
    expect(again.stdout).toContain("nothing of sluice's installed here");
  });

  test('claude: files and the .claude folder the install created are deleted again', async () => {
    const project = freshDir('bare');
    await cli(['install', 'claude', '--as', 'bot', '--project', project]);
    expect(existsSync(localSettings(project))).toBe(true);
    const run = await cli(['uninstall', 'claude', '--project', project]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`deleted ${localSettings(project)}`);
    expect(readdirSync(project)).toEqual([]);
  });

  test('claude --user: settings and the global .claude.json lose only Sluice’s entries', async () => {
    const config = freshDir('user');
    const global = { numStartups: 3, projects: { '/x': {} } };
    writeFileSync(join(config, '.claude.json'), JSON.stringify(global));
    await cli(['install', 'claude', '--as', 'bot', '--user'], { CLAUDE_CONFIG_DIR: config });
    const run = await cli(['uninstall', 'claude', '--user'], { CLAUDE_CONFIG_DIR: config });
    expect(run.code).toBe(0);
    expect(readJson(join(config, '.claude.json'))).toEqual(global);
    expect(existsSync(join(config, 'settings.json'))).toBe(false);
  });

  test('codex: config.toml keeps every other line, hooks.json keeps the user’s hooks', async () => {
    const codexHome = freshDir('codex');
    const toml = 'model = "o3"\n\n[mcp_servers.other]\ncommand = "x"\n';
    const userHooks = { hooks: { Stop: [{ hooks: [{ type: 'command', command: 'echo stop' }] }] } };
    writeFileSync(join(codexHome, 'config.toml'), toml);
    writeFileSync(join(codexHome, 'hooks.json'), JSON.stringify(userHooks));
    await cli(['install', 'codex', '--as', 'bot', '--user'], { CODEX_HOME: codexHome });
    expect(readFileSync(join(codexHome, 'config.toml'), 'utf8')).toContain('[mcp_servers.sluice]');
    const run = await cli(['uninstall', 'codex', '--user'], { CODEX_HOME: codexHome });
    expect(run.code).toBe(0);
    expect(readFileSync(join(codexHome, 'config.toml'), 'utf8')).toBe(toml);
    expect(readJson(join(codexHome, 'hooks.json'))).toEqual(userHooks);
  });

  test('is refused under the agent lock (the model’s shell cannot unlock itself)', async () => {
    const project = userProject();
    await cli(['install', 'claude', '--as', 'bot', '--project', project]);
    const lock = JSON.stringify({ agent: 'bot', home: host.home, attachRoots: [] });
    const run = await cli(['uninstall', 'claude', '--project', project], { SLUICE_AGENT_LOCK: lock });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^sluice: denied: hooks uninstall is not available under the agent lock\n$/);
    expect(JSON.stringify(readJson(localSettings(project)))).toContain('sluice');
  });

  test('refuses an unknown client with one line', async () => {
    const run = await cli(['uninstall', 'gemini']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('sluice: invalid_params: hooks uninstall takes claude or codex\n');
  });
});
