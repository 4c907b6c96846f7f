// `sluice hooks install`: merges into the user's files without losing anything, prints instead of
// writing with --dry-run, changes nothing the second time, and refuses files it cannot merge.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { shellWord } from '../../src/core/shell-word.js';
import { mergeCodexConfig } from '../../src/surfaces/hooks/install-codex.js';
import { hookCommand } from '../../src/surfaces/hooks/install-hook-entries.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, runCli, SLUICE_BIN, type TestHost } from '../support/host.js';

let host: TestHost;
let scratch: string;
beforeAll(async () => {
  host = await openTestHost();
  await host.agent('bot');
  await host.agent('other');
  scratch = mkdtempSync(join(tmpdir(), 'sluice-install-'));
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
  runCliHere(['hooks', 'install', ...args], { home: host.home, env });
const installProcess = (args: string[]) => runCli(['hooks', 'install', ...args], { home: host.home });
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

const USER_SETTINGS = {
  model: 'sonnet',
  hooks: {
    UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'echo user-hook' }] }],
    Stop: [{ hooks: [{ type: 'command', command: 'echo stop' }] }],
  },
  permissions: { allow: ['Bash(ls:*)'], deny: ['Bash(rm:*)'] },
};

describe('sluice hooks install claude', () => {
  test('merges hooks, permissions and the MCP server into a project, keeping the user’s keys', async () => {
    const project = freshDir('claude');
    mkdirSync(join(project, '.claude'));
    writeFileSync(join(project, '.claude', 'settings.json'), JSON.stringify(USER_SETTINGS));
    writeFileSync(join(project, '.mcp.json'), JSON.stringify({ mcpServers: { other: { command: 'x' } } }));

    const run = await installProcess(['claude', '--as', 'bot', '--project', project]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('permissions.allow now has: Bash(sluice message:*)');

    const settings = readJson(join(project, '.claude', 'settings.json'));
    expect(settings.model).toBe('sonnet');
    expect(settings.hooks.Stop[0]).toEqual(USER_SETTINGS.hooks.Stop[0]); // then the wake (wake-install.test.ts)
    expect(settings.hooks.UserPromptSubmit[0]).toEqual(USER_SETTINGS.hooks.UserPromptSubmit[0]);
    const prompt = settings.hooks.UserPromptSubmit[1].hooks[0];
    expect(prompt).toEqual({
      type: 'command',
      command: `${process.execPath} ${SLUICE_BIN} hook claude user-prompt-submit --as bot --home ${host.home}`,
      timeout: 10,
    });
    expect(settings.hooks.SessionStart[0].hooks[0].command).toContain('hook claude session-start --as bot');
    expect(settings.permissions).toEqual({
      allow: [
        'Bash(ls:*)',
        'Bash(sluice message:*)',
        `Bash(${process.execPath} ${SLUICE_BIN} message:*)`,
        'mcp__sluice__*',
      ],
      deny: ['Bash(rm:*)'],
    });
    expect(settings.enabledMcpjsonServers).toEqual(['sluice']);
    expect(readJson(join(project, '.mcp.json')).mcpServers).toEqual({
      other: { command: 'x' },
      sluice: {
        type: 'stdio',
        command: process.execPath,
        args: [SLUICE_BIN, 'mcp', '--as', 'bot'],
        env: { SLUICE_HOME: host.home },
      },
    });
  });

  test('running it twice changes nothing the second time', async () => {
    const project = freshDir('twice');
    await install(['claude', '--as', 'bot', '--project', project]);
    const settings = readFileSync(join(project, '.claude', 'settings.json'), 'utf8');
    const mcp = readFileSync(join(project, '.mcp.json'), 'utf8');
    const again = await install(['claude', '--as', 'bot', '--project', project]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^claude: already installed, nothing to change/);
    expect(again.stdout).toContain('permissions.allow already had');
    expect(readFileSync(join(project, '.claude', 'settings.json'), 'utf8')).toBe(settings);
    expect(readFileSync(join(project, '.mcp.json'), 'utf8')).toBe(mcp);
  });

  test('--dry-run prints the change and writes nothing', async () => {
    const project = freshDir('dry');
    const run = await install(['claude', '--as', 'bot', '--project', project, '--dry-run']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('would change (dry run, nothing written)');
    expect(run.stdout).toContain(`+++ ${join(project, '.mcp.json')} (new file)`);
    expect(run.stdout).toContain('hook claude user-prompt-submit --as bot');
    expect(() => readFileSync(join(project, '.mcp.json'))).toThrow();
    expect(() => readFileSync(join(project, '.claude', 'settings.json'))).toThrow();
  });

  test('installing for another agent replaces the earlier Sluice hooks instead of adding a second delivery', async () => {
    const project = freshDir('switch');
    await install(['claude', '--as', 'bot', '--project', project]);
    await install(['claude', '--as', 'other', '--project', project]);
    const settings = readJson(join(project, '.claude', 'settings.json'));
    const commands = (settings.hooks.UserPromptSubmit as { hooks: { command: string }[] }[]).flatMap((g) =>
      g.hooks.map((h) => h.command),
    );
    expect(commands).toHaveLength(1);
    expect(commands[0]).toContain('--as other');
    expect(readJson(join(project, '.mcp.json')).mcpServers.sluice.args).toEqual([
      SLUICE_BIN,
      'mcp',
      '--as',
      'other',
    ]);
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
    writeFileSync(join(project, '.claude', 'settings.json'), '{ "model": "x", }');
    const run = await install(['claude', '--as', 'bot', '--project', project]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^sluice: invalid_params: .*settings\.json is not valid JSON; fix it first \(nothing was changed\)\n$/,
    );
    expect(readFileSync(join(project, '.claude', 'settings.json'), 'utf8')).toBe('{ "model": "x", }');
    expect(() => readFileSync(join(project, '.mcp.json'))).toThrow();
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

  test('a sluice server written as dotted keys or an inline table is refused, not guessed at', () => {
    expect(() =>
      mergeCodexConfig('mcp_servers.sluice.command = "x"\n', '[mcp_servers.sluice]', 'config.toml'),
    ).toThrow(/in a form this installer does not edit/);
    expect(() =>
      mergeCodexConfig('[mcp_servers]\nsluice = { command = "x" }\n', '[mcp_servers.sluice]', 'config.toml'),
    ).toThrow(/in a form this installer does not edit/);
    expect(mergeCodexConfig('[mcp_servers.sluicebox]\ncommand = "y"\n', 'BLOCK', 'c')).toBe(
      '[mcp_servers.sluicebox]\ncommand = "y"\n\nBLOCK\n',
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
