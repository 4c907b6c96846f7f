// `--help` works on every command the CLI defines (walked from the command tree itself, so a new
// command is covered the day it is added), every top-level command shows examples that name real
// commands, and the global options are listed once (in `sluice --help`), named in one line elsewhere.
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allCommands, EXAMPLES } from '../../src/surfaces/cli/help.js';
import { buildProgram } from '../../src/surfaces/cli/main.js';
import { runCliHere } from '../support/cli-in-process.js';
import { runCli, tempHome } from '../support/host.js';

const pathOf = (command: Command): string[] => {
  const words: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) words.unshift(c.name());
  return words;
};

describe('sluice … --help', { timeout: 120_000 }, () => {
  let home: { home: string; cleanup: () => void };
  let paths: string[][];
  beforeAll(async () => {
    home = tempHome('sluice-help-');
    paths = allCommands(await buildProgram()).map(pathOf);
  });
  afterAll(() => home.cleanup());

  it('answers on every command with its usage, exit 0, nothing on stderr', async () => {
    expect(paths.length).toBeGreaterThan(40);
    for (const path of paths) {
      const run = await runCliHere([...path, '--help'], { home: home.home });
      expect(run.code, path.join(' ')).toBe(0);
      expect(run.stderr, path.join(' ')).toBe('');
      expect(run.stdout.split('\n')[0], path.join(' ')).toMatch(
        new RegExp(`^Usage: sluice ${path.join(' ')}\\b`),
      );
      // Listed once: the full global options only in `sluice --help`, one line naming them here.
      expect(run.stdout, path.join(' ')).not.toContain('Global Options:');
      expect(
        run.stdout.match(
          /^Global options \(sluice --help explains them\): --home DIR, --db URL, --as NAME/gm,
        ),
      ).toHaveLength(1);
    }
  });

  it('every top-level command shows an Examples section, and every example names a command that exists', async () => {
    const known = new Set(paths.map((p) => p.join(' ')));
    for (const path of paths.filter((p) => p.length === 1)) {
      const run = await runCliHere([...path, '--help'], { home: home.home });
      expect(run.stdout, path[0]).toMatch(/\nExamples:\n {2}\$ sluice /);
    }
    for (const example of Object.values(EXAMPLES).flat()) {
      const words = example
        .replace(/ --(as|home) \S+/g, '')
        .split(' ')
        .slice(1)
        .filter((w) => /^[a-z-]+$/.test(w));
      const named = [1, 2, 3].map((n) => words.slice(0, n).join(' ')).filter((p) => known.has(p));
      expect(named.length, example).toBeGreaterThan(0);
    }
  });

  it('sluice --help lists the global options once and shows first steps', async () => {
    const run = await runCliHere(['--help'], { home: home.home });
    expect(run.code).toBe(0);
    expect(run.stdout.match(/--home <dir>/g)).toHaveLength(1);
    expect(run.stdout).toContain('Examples:\n  $ sluice start');
  });

  it('through the launcher: wait and hook (fast paths past the CLI) answer --help too', async () => {
    for (const args of [
      ['wait', '--help'],
      ['hook', 'claude', 'session-start', '--help'],
      ['token', 'create', '-h'],
    ]) {
      const run = await runCli(args, { home: home.home });
      expect(run.code, args.join(' ')).toBe(0);
      expect(run.stdout, args.join(' ')).toMatch(new RegExp(`^Usage: sluice ${args[0]}`));
    }
  });
});
