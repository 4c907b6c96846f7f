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
import { sendMessage } from '../../src/host/messages/messages.js';
import {
  buildProgram,
  buildProgramFor,
  commandWord,
  expandHelp,
  usageLine,
} from '../../src/surfaces/cli/main.js';
import { packageRoot, packageVersion } from '../../src/surfaces/sluice-package.js';
import { openTestHost, REPO_ROOT, type TestHost } from '../support/host.js';
import { createImportProbe, type ImportProbe, type ProbeRun } from '../support/import-probe.js';

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
      'run',
      'start',
      'stop',
      'restart',
      'forget',
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
    expect(packageRoot()).toBe(REPO_ROOT);
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
    // Runs one entry (the compiled sources or the bundle) the way bin/sluice.js does, and logs
    // each package.json that the process reads itself (fs.readFileSync, as our modules do).
    runner = join(probe.dir, 'run.mjs');
    writeFileSync(
      runner,
      `import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
const read = fs.readFileSync;
fs.readFileSync = function (path, ...rest) {
  if (String(path).endsWith('package.json')) fs.appendFileSync(process.env.SLUICE_READ_LOG, String(path) + '\\n');
  return read.call(this, path, ...rest);
};
syncBuiltinESMExports();
const { main } = await import(process.env.SLUICE_ENTRY);
await main(process.argv);
`,
    );
  });
  afterAll(async () => {
    await host.close();
    probe.dispose();
  });

  /** Runs `entry` with `args`; also reports the package.json files it read. */
  function runEntry(entry: string, args: readonly string[]): ProbeRun & { packageJsonReads: string[] } {
    const readLog = join(probe.dir, 'package-json-reads.txt');
    writeFileSync(readLog, '');
    const run = probe.run([runner, ...args], {
      env: {
        ...process.env,
        SLUICE_ENTRY: pathToFileURL(join(REPO_ROOT, entry)).href,
        SLUICE_READ_LOG: readLog,
        SLUICE_HOME: host.home,
        SLUICE_AS: 'bot',
        SLUICE_DB: '',
      },
    });
    return { ...run, packageJsonReads: readFileSync(readLog, 'utf8').split('\n').filter(Boolean) };
  }

  function loaded(entry: string): { packages: string[]; urls: string[] } {
    const run = runEntry(entry, ['message', 'ls', '--json']);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)[0].from).toBe('owner');
    // Only what prints the version reads our package.json.
    expect(run.packageJsonReads).toEqual([]);
    return run;
  }

  it('the compiled sources: the store and the message commands, no server, MCP, bridge or media code', () => {
    const { packages, urls } = loaded('dist/src/surfaces/cli/main.js');
    expect(packages).toEqual(['better-sqlite3', 'commander', 'kysely']);
    const ours = urls.filter((u) => u.includes('/dist/src/')).map((u) => u.replace(/^.*\/dist\/src\//, ''));
    expect(ours.filter((m) => m.startsWith('surfaces/') && !m.startsWith('surfaces/cli/'))).toEqual([]);
    // The `message` group's own modules (its status subcommand lives beside it), no other group.
    expect(ours.filter((m) => m.startsWith('surfaces/cli/commands/')).sort()).toEqual([
      'surfaces/cli/commands/message-status.js',
      'surfaces/cli/commands/messages.js',
    ]);
  });

  it('`--version` reads the version from package.json when it prints it (sources and bundle)', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const entry of ['dist/src/surfaces/cli/main.js', 'dist/cli/main.js']) {
      const run = runEntry(entry, ['--version']);
      expect({ entry, stdout: run.stdout, stderr: run.stderr, status: run.status }).toEqual({
        entry,
        stdout: `${pkg.version}\n`,
        stderr: '',
        status: 0,
      });
      // (With no command word every command module loads, some packages reading their own.)
      const ours = run.packageJsonReads.filter((path) => !path.includes('/node_modules/'));
      expect(ours.filter((path) => path === join(REPO_ROOT, 'package.json'))).toHaveLength(1);
    }
  });

  it('the bundle (npm run build): a few files and no package module (only the SQLite addon)', () => {
    expect(existsSync(join(REPO_ROOT, 'dist/cli/main.js')), 'run npm run build').toBe(true);
    const { packages, urls } = loaded('dist/cli/main.js');
    // (The resolve hook sees ES imports; the addon is loaded by require() and is not listed.)
    expect(packages).toEqual([]);
    expect(urls.filter((u) => u.includes('/dist/src/'))).toEqual([]);
    // The splitter makes one chunk per set of modules shared by the same entries, so the count
    // grows with the command groups (34 after approvals, consent and provenance); what keeps the
    // start fast is the two lines above, and this bound only catches a fast path that loads it all.
    expect(urls.filter((u) => u.includes('/dist/cli/')).length).toBeLessThan(45);
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
