// The model runs `sluice message …` many times a turn, so what the CLI loads is its start-up cost
// (bench/cli-start.ts measures it). These hold the command tree to the one module a command needs
// and the bundle to no package module but the native SQLite addon.
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../src/host/messages.js';
import {
  buildProgram,
  buildProgramFor,
  commandWord,
  expandHelp,
  packageVersion,
  usageLine,
} from '../../src/surfaces/cli/main.js';
import { openTestHost, REPO_ROOT, type TestHost } from '../support/host.js';
import { createImportProbe, type ImportProbe } from '../support/import-probe.js';

describe('the command tree loads only the command that runs', () => {
  it.each([
    [['message', 'ls'], 'message'],
    [['--home', '/h', '--as', 'bot', 'message', 'ls'], 'message'],
    [['--home=/h', 'message', 'ls'], 'message'],
    [['--as', 'message', 'channel', 'ls'], 'channel'],
    [['-V'], undefined],
    [['--bogus', 'message'], undefined],
    [[], undefined],
  ] as [string[], string | undefined][])('the command word of %j is %s', (args, word) => {
    expect(commandWord(args)?.word).toBe(word);
  });

  it('registers only the message commands for `message ls`, every command for help or a typo', async () => {
    const names = (p: Awaited<ReturnType<typeof buildProgram>>) => p.commands.map((c) => c.name());
    expect(names(await buildProgramFor(['--as', 'bot', 'message', 'ls']))).toEqual(['message']);
    expect(names(await buildProgramFor(['agent', 'ls']))).toEqual(['init', 'agent', 'person']);
    expect(names(await buildProgramFor(['help', 'channel', 'ls']))).toEqual(['channel']);
    const all = names(await buildProgram());
    expect(all).toEqual(expect.arrayContaining(['message', 'channel', 'agent', 'serve', 'hooks', 'bridge']));
    expect(names(await buildProgramFor(['mesage', 'ls']))).toEqual(all);
    expect(names(await buildProgramFor([]))).toEqual(all);
    expect(names(await buildProgramFor(['toString']))).toEqual(all);
    expect(names(await buildProgramFor(['help', 'constructor']))).toEqual(all);
  });

  it('`agent settle` and the manager commands live with the other agent commands', async () => {
    const agent = (await buildProgramFor(['agent'])).commands.find((c) => c.name() === 'agent');
    expect(agent?.commands.map((c) => c.name())).toEqual([
      'add',
      'ls',
      'settle',
      'managers',
      'manage',
      'unmanage',
    ]);
  });

  it('reads `help message send` as `message send --help`', () => {
    expect(expandHelp(['help', 'message', 'send'])).toEqual(['message', 'send', '--help']);
    expect(expandHelp(['--home', 'h', 'help', 'channel', 'ls'])).toEqual([
      '--home',
      'h',
      'channel',
      'ls',
      '--help',
    ]);
    expect(expandHelp(['help', 'message'])).toEqual(['help', 'message']);
    expect(expandHelp(['message', 'help'])).toEqual(['message', 'help']);
    expect(expandHelp(['help', 'mesage', 'ls'])).toEqual(['mesage', 'ls']);
    expect(expandHelp(['help'])).toEqual(['help']);
  });

  it("puts commander's error and its suggestion on one line with a code", () => {
    expect(usageLine("error: unknown command 'mesage'\n(Did you mean message?)\n")).toBe(
      "sluice: invalid_params: unknown command 'mesage' (did you mean message?)\n",
    );
    expect(usageLine("error: missing required argument 'target'\n")).toBe(
      "sluice: invalid_params: missing required argument 'target'\n",
    );
  });

  it("knows this package's version", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(packageVersion()).toBe(pkg.version);
  });
});

describe('what `sluice message ls` loads (built CLI)', { timeout: 120_000 }, () => {
  let host: TestHost;
  let probe: ImportProbe;
  let runner: string;
  beforeAll(async () => {
    host = await openTestHost();
    await host.agent('bot');
    await sendMessage(host.ctx, host.owner, { to: 'bot', body: 'hello' });
    probe = createImportProbe('sluice-cli-imports-');
    // Runs one entry (the compiled sources or the bundle) the way bin/sluice.js does.
    runner = join(probe.dir, 'run.mjs');
    writeFileSync(
      runner,
      `const { main } = await import(process.env.SLUICE_ENTRY);\nawait main(process.argv);\n`,
    );
  });
  afterAll(async () => {
    await host.close();
    probe.dispose();
  });

  function loaded(entry: string): { packages: string[]; urls: string[] } {
    const run = probe.run([runner, 'message', 'ls', '--json'], {
      env: {
        ...process.env,
        SLUICE_ENTRY: pathToFileURL(join(REPO_ROOT, entry)).href,
        SLUICE_HOME: host.home,
        SLUICE_AS: 'bot',
        SLUICE_DB: '',
      },
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)[0].from).toBe('owner');
    return run;
  }

  it('the compiled sources: the store and the message commands, no server, MCP, bridge or media code', () => {
    const { packages, urls } = loaded('dist/src/surfaces/cli/main.js');
    expect(packages).toEqual(['better-sqlite3', 'commander', 'kysely']);
    const ours = urls.filter((u) => u.includes('/dist/src/')).map((u) => u.replace(/^.*\/dist\/src\//, ''));
    expect(ours.filter((m) => m.startsWith('surfaces/') && !m.startsWith('surfaces/cli/'))).toEqual([]);
    expect(ours.filter((m) => m.startsWith('surfaces/cli/commands/'))).toEqual([
      'surfaces/cli/commands/messages.js',
    ]);
  });

  it('the bundle (npm run build): a few files and no package module (only the SQLite addon)', () => {
    expect(existsSync(join(REPO_ROOT, 'dist/cli/main.js')), 'run npm run build').toBe(true);
    const { packages, urls } = loaded('dist/cli/main.js');
    // (The resolve hook sees ES imports; the addon is loaded by require() and is not listed.)
    expect(packages).toEqual([]);
    expect(urls.filter((u) => u.includes('/dist/src/'))).toEqual([]);
    expect(urls.filter((u) => u.includes('/dist/cli/')).length).toBeLessThan(30);
  });
});

describe('bin/sluice.js picks the bundle only when it is current', () => {
  // A stand-in package: each entry prints its own name, and the test sets their times.
  const root = mkdtempSync(join(tmpdir(), 'sluice-bin-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const entry = (path: string, name: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(
      join(root, path),
      `export async function main() { process.stdout.write(${JSON.stringify(name)}); }\n`,
    );
  };
  mkdirSync(join(root, 'bin'));
  copyFileSync(join(REPO_ROOT, 'bin/sluice.js'), join(root, 'bin/sluice.js'));
  writeFileSync(join(root, 'package.json'), '{"type":"module"}');
  entry('dist/src/surfaces/cli/main.js', 'compiled');
  const run = () =>
    spawnSync(process.execPath, [join(root, 'bin/sluice.js'), 'message', 'ls'], { encoding: 'utf8' }).stdout;
  const touch = (path: string, seconds: number) => utimesSync(join(root, path), seconds, seconds);

  it('runs the compiled sources when there is no bundle', () => {
    expect(run()).toBe('compiled');
  });

  it('runs the bundle when it is as new as the compiled sources, and not when tsc ran after it', () => {
    entry('dist/cli/main.js', 'bundle');
    touch('dist/src/surfaces/cli/main.js', 1_000_000);
    touch('dist/cli/main.js', 1_000_000);
    expect(run()).toBe('bundle');
    touch('dist/src/surfaces/cli/main.js', 1_000_010);
    expect(run()).toBe('compiled');
  });
});
