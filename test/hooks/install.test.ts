// `sluice hooks install`: merges into the user's files without losing anything, prints instead of
// writing with --dry-run, changes nothing the second time, and refuses files it cannot merge.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { shellWord } from '../../src/core/shell-word.js';
import { claudeProjectKey } from '../../src/surfaces/hooks/claude-files.js';
import { planClaudeInstall } from '../../src/surfaces/hooks/install-claude.js';
import { mergeCodexConfig, planCodexInstall } from '../../src/surfaces/hooks/install-codex.js';
import { hookCommand } from '../../src/surfaces/hooks/install-hook-entries.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, runCli, SLUICE_BIN, type TestHost } from '../support/host.js';

let host: TestHost;
let scratch: string;
/** The user's Claude config folder for every run ($CLAUDE_CONFIG_DIR): local MCP entries land there. */
let userConfig: string;
beforeAll(async () => {
  host = await openTestHost();
  await host.agent('bot');
  await host.agent('other');
  scratch = mkdtempSync(join(tmpdir(), 'sluice-install-'));
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
// the real clients read. The first test runs the built CLI in a child process (npm run build).
const install = (args: string[], env: Record<string, string> = {}) =>
  runCliHere(['hooks', 'install', ...args], {
    home: host.home,
    env: { CLAUDE_CONFIG_DIR: userConfig, ...env },
  });
const installProcess = (args: string[]) =>
  runCli(['hooks', 'install', ...args], { home: host.home, env: { CLAUDE_CONFIG_DIR: userConfig } });
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));
/**
 * The project's local-scope MCP servers in the user's .claude.json, under the key Claude Code uses
 * (another run may have left a `/tmp/.git`, making /tmp the repository of every scratch folder).
 */
const localServers = (project: string) =>
  readJson(join(userConfig, '.claude.json')).projects[claudeProjectKey(project)].mcpServers;
const localSettings = (project: string) => join(project, '.claude', 'settings.local.json');

const USER_SETTINGS = {
  model: 'sonnet',
  hooks: {
    UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'echo user-hook' }] }],
    Stop: [{ hooks: [{ type: 'command', command: 'echo stop' }] }],
  },
  permissions: { allow: ['Bash(ls:*)'], deny: ['Bash(rm:*)'] },
};

describe('sluice hooks install claude', () => {
  test('writes hooks, permissions and the lock into .claude/settings.local.json and the MCP server in local scope; the shared files stay untouched', async () => {
    const project = freshDir('claude');
    mkdirSync(join(project, '.claude'));
    const shared = JSON.stringify(USER_SETTINGS);
    const sharedMcp = JSON.stringify({ mcpServers: { other: { command: 'x' } } });
    writeFileSync(join(project, '.claude', 'settings.json'), shared);
    writeFileSync(join(project, '.mcp.json'), sharedMcp);

    const run = await installProcess(['claude', '--as', 'bot', '--project', project]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('permissions.allow now has: Bash(sluice message:*)');
    expect(run.stdout).toContain(`created ${localSettings(project)}`);

    // The files a team commits: byte for byte as they were.
    expect(readFileSync(join(project, '.claude', 'settings.json'), 'utf8')).toBe(shared);
    expect(readFileSync(join(project, '.mcp.json'), 'utf8')).toBe(sharedMcp);

    const settings = readJson(localSettings(project));
    const prompt = settings.hooks.UserPromptSubmit[0].hooks[0];
    expect(prompt).toEqual({
      type: 'command',
      command: `${process.execPath} ${SLUICE_BIN} hook claude user-prompt-submit --as bot --home ${host.home}`,
      timeout: 10,
    });
    expect(settings.hooks.SessionStart[0].hooks[0].command).toContain('hook claude session-start --as bot');
    expect(settings.permissions).toEqual({
      allow: [
        'Bash(sluice message:*)',
        `Bash(${process.execPath} ${SLUICE_BIN} message:*)`,
        'mcp__sluice__*',
      ],
    });
    expect(settings.enabledMcpjsonServers).toBeUndefined();
    expect(JSON.parse(settings.env.SLUICE_AGENT_LOCK).agent).toBe('bot');
    expect(localServers(project)).toEqual({
      sluice: {
        type: 'stdio',
        command: process.execPath,
        args: [SLUICE_BIN, 'mcp', '--as', 'bot'],
        env: { SLUICE_HOME: host.home },
      },
    });
  });

  test('the local MCP entry is keyed like claude mcp add --scope local: the main work tree of the git repository', async () => {
    const repo = freshDir('repo');
    mkdirSync(join(repo, '.git'));
    const sub = join(repo, 'packages', 'app');
    mkdirSync(sub, { recursive: true });
    const worktree = freshDir('worktree');
    mkdirSync(join(repo, '.git', 'worktrees', 'wt'), { recursive: true });
    writeFileSync(join(repo, '.git', 'worktrees', 'wt', 'commondir'), '../..\n');
    writeFileSync(join(worktree, '.git'), `gitdir: ${join(repo, '.git', 'worktrees', 'wt')}\n`);
    for (const dir of [sub, worktree]) {
      expect((await install(['claude', '--as', 'bot', '--project', dir])).code).toBe(0);
    }
    const projects = readJson(join(userConfig, '.claude.json')).projects;
    expect(projects[realpathSync(repo)].mcpServers.sluice.args).toEqual([SLUICE_BIN, 'mcp', '--as', 'bot']);
    expect(projects[realpathSync(sub)]).toBeUndefined();
    expect(projects[realpathSync(worktree)]).toBeUndefined();
  });

  test('moves what an older version wrote into the shared files out of them (a file left empty goes)', async () => {
    const project = freshDir('legacy');
    mkdirSync(join(project, '.claude'));
    const command = `${process.execPath} ${SLUICE_BIN} hook claude user-prompt-submit --as bot --home ${host.home}`;
    const old = {
      model: 'sonnet',
      hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command, timeout: 10 }] }] },
      permissions: { allow: ['Bash(ls:*)', 'Bash(sluice message:*)', 'mcp__sluice__*'] },
      enabledMcpjsonServers: ['sluice'],
      env: { SLUICE_AGENT_LOCK: '{"agent":"bot"}' },
    };
    writeFileSync(join(project, '.claude', 'settings.json'), JSON.stringify(old));
    const oldServer = { command: process.execPath, args: [SLUICE_BIN, 'mcp', '--as', 'bot'] };
    writeFileSync(join(project, '.mcp.json'), JSON.stringify({ mcpServers: { sluice: oldServer } }));
    const run = await install(['claude', '--as', 'bot', '--project', project]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`deleted ${join(project, '.mcp.json')}`);
    expect(readJson(join(project, '.claude', 'settings.json'))).toEqual({
      model: 'sonnet',
      permissions: { allow: ['Bash(ls:*)'] },
    });
    expect(existsSync(join(project, '.mcp.json'))).toBe(false);
    expect(readJson(localSettings(project)).hooks.UserPromptSubmit).toHaveLength(1);
  });

  test('a database URL with a password is refused for a project (claude and codex); the user scope takes it', () => {
    const launcher = { node: process.execPath, bin: SLUICE_BIN };
    const project = freshDir('password');
    const globalConfig = join(project, 'user-claude.json');
    for (const db of [
      'postgres://alice:s3cret@db.example/sluice',
      'postgres://db.example/sluice?password=s3cret',
    ]) {
      const store = { home: host.home, db };
      const claude = () =>
        planClaudeInstall({ agent: 'bot', store, launcher, scope: { project, globalConfig } });
      const codex = () =>
        planCodexInstall({
          agent: 'bot',
          store,
          launcher,
          codexDir: join(project, '.codex'),
          inProject: true,
        });
      for (const plan of [claude, codex]) {
        expect(plan).toThrow(/the database URL holds a password, which would be written into the project/);
      }
      const user = planClaudeInstall({
        agent: 'bot',
        store,
        launcher,
        scope: { user: { configDir: join(project, 'cfg'), globalConfig } },
      });
      expect(user.changes).toHaveLength(2);
    }
    const plain = { home: host.home, db: 'postgres://alice@db.example/sluice' };
    const ok = planClaudeInstall({ agent: 'bot', store: plain, launcher, scope: { project, globalConfig } });
    expect(ok.changes.map((c) => c.path)).toEqual([
      join(project, '.claude', 'settings.local.json'),
      globalConfig,
    ]);
  });

  test('running it twice changes nothing the second time', async () => {
    const project = freshDir('twice');
    await install(['claude', '--as', 'bot', '--project', project]);
    const settings = readFileSync(localSettings(project), 'utf8');
    const global = readFileSync(join(userConfig, '.claude.json'), 'utf8');
    const again = await install(['claude', '--as', 'bot', '--project', project]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^claude: already installed, nothing to change/);
    expect(again.stdout).toContain('permissions.allow already had');
    expect(readFileSync(localSettings(project), 'utf8')).toBe(settings);
    expect(readFileSync(join(userConfig, '.claude.json'), 'utf8')).toBe(global);
  });

  test('--dry-run prints the change and writes nothing', async () => {
    const project = freshDir('dry');
    const global = () =>
      existsSync(join(userConfig, '.claude.json')) ? readJson(join(userConfig, '.claude.json')) : null;
    const before = global();
    const run = await install(['claude', '--as', 'bot', '--project', project, '--dry-run']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('would change (dry run, nothing written)');
    expect(run.stdout).toContain(`+++ ${localSettings(project)} (new file)`);
    expect(run.stdout).toContain('hook claude user-prompt-submit --as bot');
    expect(existsSync(join(project, '.claude'))).toBe(false);
    expect(global()).toEqual(before);
  });

  test('installing for another agent replaces the earlier Sluice hooks instead of adding a second delivery', async () => {
    const project = freshDir('switch');
    await install(['claude', '--as', 'bot', '--project', project]);
    await install(['claude', '--as', 'other', '--project', project]);
    const settings = readJson(localSettings(project));
    const commands = (settings.hooks.UserPromptSubmit as { hooks: { command: string }[] }[]).flatMap((g) =>
      g.hooks.map((h) => h.command),
    );
    expect(commands).toHaveLength(1);
    expect(commands[0]).toContain('--as other');
    expect(localServers(project).sluice.args).toEqual([SLUICE_BIN, 'mcp', '--as', 'other']);
  });

  test('--user writes $CLAUDE_CONFIG_DIR/settings.json and the MCP server into its .claude.json', async () => {
    const config = freshDir('user');
    writeFileSync(join(config, '.claude.json'), JSON.stringify({ numStartups: 3, projects: { '/x': {} } }));
    const run = await install(['claude', '--as', 'bot', '--user'], { CLAUDE_CONFIG_DIR: config });
    expect(run.code).toBe(0);
    const global = readJson(join(config, '.claude.json'));
    expect(global.numStartups).toBe(3);
    expect(global.projects).toEqual({ '/x': {} });
    expect(global.mcpServers.sluice.args).toEqual([SLUICE_BIN, 'mcp', '--as', 'bot']);
    expect(readJson(join(config, 'settings.json')).hooks.UserPromptSubmit).toHaveLength(1);
  });

  test('a settings file that is not JSON is refused and left as it was', async () => {
    const project = freshDir('broken');
    mkdirSync(join(project, '.claude'));
    writeFileSync(join(project, '.claude', 'settings.local.json'), '{ "model": "x", }');
    const run = await install(['claude', '--as', 'bot', '--project', project]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^sluice: invalid_params: .*settings\.local\.json is not valid JSON; fix it first \(nothing was changed\)\n$/,
    );
    expect(readFileSync(localSettings(project), 'utf8')).toBe('{ "model": "x", }');
  });

  test.each([
    ['no agent', ['claude', '--project', '.'], 1, /name the agent: --as AGENT/],
    ['a person', ['claude', '--as', 'owner'], 1, /owner is a person/],
    ['an unknown agent', ['claude', '--as', 'ghost'], 2, /not_found: no principal named "ghost"/],
    ['an unknown client', ['gemini', '--as', 'bot'], 1, /hooks install takes claude or codex/],
    [
      'both scopes',
      ['claude', '--as', 'bot', '--user', '--project', '.'],
      1,
      /--project DIR or --user, not both/,
    ],
  ])('refuses %s with one line', async (_name, args, code, reason) => {
    const run = await install(args as string[], { CLAUDE_CONFIG_DIR: freshDir('refuse') });
    expect(run.code).toBe(code);
    expect(run.stderr).toMatch(reason as RegExp);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe('sluice hooks install codex', () => {
  const USER_TOML = [
    '# my settings',
    'model = "gpt-5"',
    '',
    '[mcp_servers.other]',
    'command = "other"',
    '',
    '[mcp_servers.sluice]',
    'command = "stale"',
    '',
    '[mcp_servers.sluice.env]',
    'OLD = "1"',
    '',
    '[projects."/work"]',
    'trust_level = "trusted"',
    '',
  ].join('\n');

  test('replaces only the [mcp_servers.sluice] tables in config.toml and writes hooks.json', async () => {
    const codexHome = freshDir('codex');
    writeFileSync(join(codexHome, 'config.toml'), USER_TOML);
    writeFileSync(
      join(codexHome, 'hooks.json'),
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'echo stop' }] }] } }),
    );
    const run = await install(['codex', '--as', 'bot'], { CODEX_HOME: codexHome });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('only after you trust it');
    const toml = readFileSync(join(codexHome, 'config.toml'), 'utf8');
    expect(toml).toBe(
      [
        '# my settings',
        'model = "gpt-5"',
        '',
        '[mcp_servers.other]',
        'command = "other"',
        '',
        '[projects."/work"]',
        'trust_level = "trusted"',
        '',
        '[mcp_servers.sluice]',
        `command = ${JSON.stringify(process.execPath)}`,
        `args = [${JSON.stringify(SLUICE_BIN)}, "mcp", "--as", "bot"]`,
        'default_tools_approval_mode = "approve"',
        '',
        '[mcp_servers.sluice.env]',
        `SLUICE_HOME = ${JSON.stringify(host.home)}`,
        '',
      ].join('\n'),
    );
    const hooks = readJson(join(codexHome, 'hooks.json')).hooks;
    expect(hooks.Stop).toEqual([{ hooks: [{ type: 'command', command: 'echo stop' }] }]);
    expect(hooks.UserPromptSubmit[0].hooks[0]).toEqual({
      type: 'command',
      command: `${process.execPath} ${SLUICE_BIN} hook codex user-prompt-submit --as bot --home ${host.home}`,
    });
    const again = await install(['codex', '--as', 'bot'], { CODEX_HOME: codexHome });
    expect(again.stdout).toMatch(/^codex: already installed, nothing to change/);
    expect(readFileSync(join(codexHome, 'config.toml'), 'utf8')).toBe(toml);
  });

  test('the sluice tools are approved up front: an install an older version wrote gets the key, uninstall takes it out', async () => {
    // `codex exec` runs with approvals "never": a tool call that would ask is refused outright
    // ("MCP tool call requires approval, but approval policy is never"), so the agent could not reply.
    const codexHome = freshDir('codex-approve');
    const provider = 'model = "gpt-5"\n';
    const oldInstall = [
      '[mcp_servers.sluice]',
      `command = ${JSON.stringify(process.execPath)}`,
      `args = [${JSON.stringify(SLUICE_BIN)}, "mcp", "--as", "bot"]`,
      '',
      '[mcp_servers.sluice.env]',
      `SLUICE_HOME = ${JSON.stringify(host.home)}`,
      '',
    ].join('\n');
    writeFileSync(join(codexHome, 'config.toml'), `${provider}\n${oldInstall}`);
    const run = await install(['codex', '--as', 'bot'], { CODEX_HOME: codexHome });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(/already installed/);
    const toml = readFileSync(join(codexHome, 'config.toml'), 'utf8');
    const table = toml.slice(toml.indexOf('[mcp_servers.sluice]'), toml.indexOf('[mcp_servers.sluice.env]'));
    expect(table.split('\n')).toContain('default_tools_approval_mode = "approve"');
    expect(toml.match(/default_tools_approval_mode/g)).toHaveLength(1);

    const removed = await runCliHere(['hooks', 'uninstall', 'codex'], {
      home: host.home,
      env: { CLAUDE_CONFIG_DIR: userConfig, CODEX_HOME: codexHome },
    });
    expect(removed.code, removed.stderr).toBe(0);
    expect(readFileSync(join(codexHome, 'config.toml'), 'utf8')).toBe(provider);
  });

  test('a sluice server written as dotted keys or an inline table is refused, not guessed at', () => {
    expect(() =>
      mergeCodexConfig('mcp_servers.sluice.command = "x"\n', '[mcp_servers.sluice]', 'config.toml'),
    ).toThrow(/in a form this installer does not edit/);
    expect(() =>
      mergeCodexConfig('[mcp_servers]\nsluice = { command = "x" }\n', '[mcp_servers.sluice]', 'config.toml'),
    ).toThrow(/in a form this installer does not edit/);
    const block = '[mcp_servers.sluice]\ncommand = "s"';
    expect(mergeCodexConfig('[mcp_servers.sluicebox]\ncommand = "y"\n', block, 'c')).toBe(
      `[mcp_servers.sluicebox]\ncommand = "y"\n\n${block}\n`,
    );
  });
});

describe('hook commands survive any path', () => {
  test('paths with spaces and quotes are quoted for the shell the client runs hooks with', () => {
    const command = hookCommand(
      { node: '/opt/my node/bin/node', bin: "/home/o'brien/sluice/bin/sluice.js" },
      'claude',
      'user-prompt-submit',
      'bot',
      { home: '/tmp/h', db: undefined },
    );
    expect(command).toBe(
      `'/opt/my node/bin/node' '/home/o'\\''brien/sluice/bin/sluice.js' hook claude user-prompt-submit --as bot --home /tmp/h`,
    );
    expect(shellWord('')).toBe("''");
  });
});
