import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { closestNames, resolvePrincipal } from '../../src/host/identity/principals.js';
import { renderTable } from '../../src/surfaces/cli/list-output.js';
import { findOnPath, launcherNotes } from '../../src/surfaces/cli/on-path.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, REPO_ROOT, runCli, type TestHost } from '../support/host.js';

// What a newcomer tries first (compare gh and git): the CLI run in this process, and through the
// built launcher where the process is the point (the version it finds, a few exit codes).
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('the sluice CLI for people', { timeout: 180_000 }, () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
    await h.agent('bot');
    await h.agent('builder', 'turn');
    await h.person('alice');
  });
  afterAll(async () => h.close());
  const cli = (...args: string[]) => runCliHere(args, { home: h.home });
  const ok = async (...args: string[]) => {
    const r = await cli(...args);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };
  /** Channels, principals and messages: a refused command must leave all of them as they were. */
  const state = async () => [await ok('channel', 'ls', '--json'), await ok('queue', 'summary', 'bot')];

  it('prints its version', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    // The built launcher: the version is found from where the installed package sits.
    expect(await runCli(['--version'], { home: h.home })).toEqual({
      code: 0,
      stdout: `${pkg.version}\n`,
      stderr: '',
    });
  });

  it('lists agents and people in the shared list style, and as JSON', async () => {
    const agents = (await ok('agent', 'ls')).trimEnd().split('\n');
    expect(agents[0]).toMatch(/^NAME\s+SETTLEMENT\s+RUN\s+CREATED$/);
    expect(agents.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ['bot', 'explicit'],
      ['builder', 'turn'],
    ]);
    expect(JSON.parse(await ok('person', 'ls', '--json')).map((p: { name: string }) => p.name)).toEqual([
      'alice',
      'owner',
    ]);
    expect((await ok('person', 'ls')).split('\n')[0]).toMatch(/^NAME\s+CREATED$/);
  });

  it('shows who is in a channel, by #name and by the dm:a,b name channel ls prints', async () => {
    await ok('channel', 'create', 'general', '--members', 'bot,alice');
    await ok('message', 'send', 'bot', '-m', 'hello bot');
    expect(await ok('channel', 'members', '#general')).toMatch(
      /^NAME\s+KIND\nalice\s+person\nbot\s+agent\nowner\s+person\n$/,
    );
    const listed = (await ok('channel', 'ls')).split('\n');
    expect(listed[0]).toMatch(/^NAME\s+KIND\s+MEMBERS$/);
    expect(listed).toContainEqual(expect.stringMatching(/^dm:bot,owner\s+dm\s+bot,owner$/));
    expect(JSON.parse(await ok('channel', 'members', 'dm:bot,owner', '--json'))).toEqual([
      { name: 'bot', kind: 'agent' },
      { name: 'owner', kind: 'person' },
    ]);
    const history = JSON.parse(await ok('channel', 'history', 'dm:bot,owner', '--json'));
    expect(history.map((m: { body: string }) => m.body)).toEqual(['hello bot']);
  });

  it("lists an agent's pending messages as a table too", async () => {
    const lines = (await ok('message', 'ls', '--as', 'bot')).trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+CHANNEL\s+FROM\s+CREATED\s+STATE\s+SUBJECT$/);
    expect(lines[1]).toMatch(/^[0-9A-Z]{26}\s+dm:bot,owner\s+owner \(owner\)\s+\S+\s+waiting\s+hello bot$/);
    expect(await ok('message', 'ls', '--as', 'builder')).toBe('no pending messages\n');
  });

  it('reading the history of a DM that does not exist yet creates nothing', async () => {
    const before = await state();
    expect(await ok('channel', 'history', 'builder')).toBe('no messages\n');
    expect(await state()).toEqual(before);
  });

  it('a mistyped home is one clear line and creates nothing (only start, init and serve create a home)', async () => {
    const typo = join(mkdtempSync(join(tmpdir(), 'sluice-typo-')), 'hmoe');
    try {
      for (const args of [['message', 'ls', '--as', 'bot'], ['login-link'], ['agent', 'ls']]) {
        const r = await runCliHere(['--home', typo, ...args], { home: h.home });
        expect(r.code).toBe(2);
        expect(r.stdout).toBe('');
        expect(r.stderr).toBe(
          `sluice: not_found: no Sluice home at ${typo}: check --home / SLUICE_HOME, or create it with "sluice start" (or npm start)\n`,
        );
        expect(existsSync(typo)).toBe(false);
      }
      const db = join(typo, 'other.db');
      const r = await runCliHere(['--db', db, 'agent', 'ls'], { home: h.home });
      expect([r.code, r.stderr.split('\n')[0]]).toEqual([
        2,
        expect.stringContaining(`no Sluice database at ${db}`),
      ]);
      expect(existsSync(typo)).toBe(false);
      expect((await runCliHere(['--home', typo, 'init'], { home: h.home })).code).toBe(0);
      expect(existsSync(join(typo, 'sluice.db'))).toBe(true);
    } finally {
      rmSync(join(typo, '..'), { recursive: true, force: true });
    }
  });

  it('a --db that is neither a postgres:// URL nor a path is one line and creates nothing', async () => {
    const work = mkdtempSync(join(tmpdir(), 'sluice-db-url-'));
    try {
      for (const url of [`sqlite://${work}/x.db`, 'postgress://127.0.0.1/test', 'mysql://localhost/x']) {
        for (const args of [['init'], ['start'], ['agent', 'ls']]) {
          const r = await runCliHere(['--db', url, ...args], { home: h.home });
          expect([r.code, r.stdout, r.stderr]).toEqual([
            1,
            '',
            `sluice: invalid_params: --db / SLUICE_DB takes a postgres:// URL or a SQLite file's path, not ${JSON.stringify(url)}\n`,
          ]);
        }
        const r = await runCliHere(['agent', 'ls'], { home: h.home, env: { SLUICE_DB: url } });
        expect(r.stderr).toMatch(/^sluice: invalid_params: --db \/ SLUICE_DB takes/);
      }
      expect(readdirSync(work)).toEqual([]);
      for (const scheme of ['sqlite:', 'postgress:', 'mysql:']) expect(existsSync(scheme)).toBe(false);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('init makes the folder of a --db file; the other commands refuse a missing one and make nothing', async () => {
    const work = mkdtempSync(join(tmpdir(), 'sluice-db-folder-'));
    try {
      const db = join(work, 'data', 'sluice', 'main.db');
      const refused = await runCliHere(['--db', db, 'agent', 'ls'], { home: h.home });
      expect([refused.code, refused.stderr.split('\n')[0]]).toEqual([
        2,
        expect.stringContaining(`no Sluice database at ${db}`),
      ]);
      expect(readdirSync(work)).toEqual([]);
      expect((await runCliHere(['--db', db, 'init'], { home: h.home })).code).toBe(0);
      expect(existsSync(db)).toBe(true);
      expect(statSync(join(work, 'data')).mode & 0o777).toBe(0o700);
      expect(await runCliHere(['--db', db, 'agent', 'ls'], { home: h.home })).toMatchObject({ code: 0 });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('a home or --db folder that cannot be a folder is one line with a code, not an internal error', async () => {
    const work = mkdtempSync(join(tmpdir(), 'sluice-home-path-'));
    try {
      const file = join(work, 'a-file');
      writeFileSync(file, 'not a folder');
      const long = join(work, 'x'.repeat(300));
      const cases: [string[], string, string][] = [
        [['--home', file, 'init'], `the home ${JSON.stringify(file)}`, 'EEXIST'],
        [['--home', join(file, 'home'), 'init'], `the home ${JSON.stringify(join(file, 'home'))}`, 'ENOTDIR'],
        [['--home', long, 'start'], 'the home', 'ENAMETOOLONG'],
        [
          ['--db', join(file, 'x.db'), 'init'],
          `the folder of the database file ${JSON.stringify(file)}`,
          'EEXIST',
        ],
      ];
      for (const [args, what, code] of cases) {
        const r = await runCliHere(args, { home: h.home });
        expect([r.code, r.stdout]).toEqual([1, '']);
        expect(r.stderr).toMatch(
          new RegExp(
            `^sluice: invalid_params: ${escapeRegExp(what)}.* is not a folder Sluice can make \\(${code}\\); check the path\n$`,
          ),
        );
      }
      expect(readdirSync(work)).toEqual(['a-file']);
      expect(readFileSync(file, 'utf8')).toBe('not a folder');
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('shows the help of a subcommand with `sluice help message send`', async () => {
    const out = await ok('help', 'message', 'send');
    expect(out).toMatch(/^Usage: sluice message send \[options\] <target>/);
    expect(out).toContain('--idempotency-key');
  });

  const refusals: [string, string[], number, RegExp][] = [
    [
      'a mistyped command',
      ['mesage', 'ls'],
      1,
      /^sluice: invalid_params: unknown command 'mesage' \(did you mean message\?\)$/,
    ],
    [
      'help for a command that does not exist',
      ['help', 'mesage'],
      1,
      /^sluice: invalid_params: unknown command 'mesage' \(did you mean message\?\)$/,
    ],
    [
      'a command named like an Object method',
      ['toString'],
      1,
      /^sluice: invalid_params: unknown command 'toString'/,
    ],
    [
      'a mistyped subcommand',
      ['channel', 'lss'],
      1,
      /^sluice: invalid_params: unknown command 'lss' \(did you mean ls\?\)$/,
    ],
    [
      'a mistyped option',
      ['agent', 'ls', '--jsn'],
      1,
      /^sluice: invalid_params: unknown option '--jsn' \(did you mean --json\?\)$/,
    ],
    [
      'a mistyped principal',
      ['message', 'send', 'alcie', '-m', 'hi'],
      2,
      /^sluice: not_found: no principal named "alcie" \(did you mean alice\?\)$/,
    ],
    [
      'a channel without its #',
      ['message', 'send', 'general', '-m', 'hi'],
      2,
      /^sluice: not_found: no principal named "general" \(did you mean #general\? a channel is written with its #\)$/,
    ],
    [
      'a DM name that is not yours',
      ['channel', 'history', 'dm:alice,bot'],
      2,
      /^sluice: not_found: no DM named "dm:alice,bot"/,
    ],
    [
      'members of a channel you are not in',
      ['channel', 'members', '#general', '--as', 'builder'],
      2,
      /^sluice: not_member: /,
    ],
    ['members of an unknown channel', ['channel', 'members', '#nope'], 2, /^sluice: not_found: /],
  ];

  /** These run in a real process too: its exit code, and commander's errors on its stderr. */
  const throughTheLauncher = new Set(['a mistyped command', 'a mistyped principal']);

  it.each(refusals)(
    'refuses %s with one line and a code, and changes nothing',
    async (what, args, code, line) => {
      const before = await state();
      const r = throughTheLauncher.has(what) ? await runCli(args, { home: h.home }) : await cli(...args);
      expect(r.code).toBe(code);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr.trimEnd()).toMatch(line);
      expect(await state()).toEqual(before);
    },
  );

  it('the did-you-mean is in the not_found data, for every surface', async () => {
    const err = await resolvePrincipal(h.ctx, 'buider').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).data).toEqual({ name: 'buider', suggestions: ['builder'] });
    const channel = await resolvePrincipal(h.ctx, 'general').catch((e: unknown) => e);
    expect((channel as SluiceError).data).toMatchObject({ channel: '#general' });
  });
});

describe('did-you-mean, tables and PATH notes', () => {
  it('suggests names within a small edit distance, closest first', () => {
    const names = ['alice', 'alicia', 'bob', 'builder', 'owner'];
    expect(closestNames('alcie', names)).toEqual(['alice']);
    expect(closestNames('ALICE', names)).toEqual(['alice']);
    expect(closestNames('bobb', names)).toEqual(['bob']);
    expect(closestNames('zzz', names)).toEqual([]);
    expect(closestNames('', names)).toEqual([]);
  });

  it('aligns a table under capital headers and keeps every cell on one line', () => {
    const text = renderTable(
      [
        { header: 'NAME', cell: (r: { name: string; note: string }) => r.name },
        { header: 'NOTE', cell: (r: { name: string; note: string }) => r.note },
      ],
      [
        { name: 'a', note: 'two\nlines\tand a tab' },
        { name: 'longer', note: '' },
      ],
    );
    expect(text).toBe('NAME    NOTE\na       two lines and a tab\nlonger');
  });

  it('finds sluice on PATH and says what to do when it is missing or another installation', () => {
    const launcher = { node: process.execPath, bin: join(REPO_ROOT, 'bin/sluice.js') };
    const binDir = join(REPO_ROOT, 'bin');
    expect(findOnPath('sluice.js', { PATH: `relative:${binDir}` })).toBe(launcher.bin);
    const missing = launcherNotes(launcher, 'claude', 'bot', { PATH: '/nonexistent' });
    expect(missing[0]).toContain(`run sluice hooks install claude --as bot again`);
    expect(missing[1]).toMatch(/^PATH: no sluice on your PATH/);
    expect(missing[1]).toContain(`ln -s ${launcher.bin} ~/.local/bin/sluice`);

    const dir = mkdtempSync(join(tmpdir(), 'sluice-path-'));
    try {
      mkdirSync(join(dir, 'linked'));
      symlinkSync(launcher.bin, join(dir, 'linked', 'sluice'));
      expect(launcherNotes(launcher, 'codex', 'bot', { PATH: join(dir, 'linked') })).toHaveLength(1);
      mkdirSync(join(dir, 'other'));
      writeFileSync(join(dir, 'other', 'sluice'), '#!/bin/sh\n', { mode: 0o755 });
      const other = launcherNotes(launcher, 'codex', 'bot', { PATH: join(dir, 'other') });
      expect(other[1]).toBe(
        `PATH: sluice on your PATH is ${join(dir, 'other', 'sluice')}, not this installation (${launcher.bin}): the model's sluice message … runs that one`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
