// A repository can ship `.claude` or `.codex` as a symlink: `hooks install --project` must not
// follow it out of the project and rewrite someone else's config.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { assertWritesInsideProject } from '../../src/surfaces/hooks/install-files.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, runCli, type TestHost } from '../support/host.js';

let host: TestHost;
let scratch: string;
beforeAll(async () => {
  host = await openTestHost();
  await host.agent('bot');
  scratch = mkdtempSync(join(tmpdir(), 'sluice-symlink-'));
});
afterAll(async () => {
  await host.close();
  rmSync(scratch, { recursive: true, force: true });
});

// The writing install runs the built CLI in a child process (npm run build); the --dry-run one in
// this process through the CLI's main (runCliHere): the refusal is the same code either way.
const install = (args: string[]) =>
  (args.includes('--dry-run') ? runCliHere : runCli)(['hooks', 'install', ...args], {
    home: host.home,
    env: { CLAUDE_CONFIG_DIR: join(scratch, 'user-claude'), CODEX_HOME: join(scratch, 'user-codex') },
  });

describe('hooks install refuses config folders that lead out of the project', () => {
  test.each([
    ['claude', '.claude'],
    ['codex', '.codex'],
  ])(
    '%s: a %s symlinked to a folder outside is refused, and nothing is written there',
    async (client, folder) => {
      const project = join(scratch, `p-${client}`);
      const victim = join(scratch, `victim-${client}`);
      mkdirSync(project, { recursive: true });
      mkdirSync(victim, { recursive: true });
      writeFileSync(join(victim, 'settings.json'), '{"mine":true}');
      symlinkSync(victim, join(project, folder));

      for (const extra of [['--dry-run'], []]) {
        const run = await install([client, '--as', 'bot', '--project', project, ...extra]);
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/^sluice: denied: .*leads out of the project/);
        expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      }
      expect(readFileSync(join(victim, 'settings.json'), 'utf8')).toBe('{"mine":true}');
      expect(existsSync(join(victim, 'hooks.json'))).toBe(false);
      expect(existsSync(join(victim, 'config.toml'))).toBe(false);
    },
  );

  test('a symlinked .mcp.json leading out is refused too; a symlink that stays inside is fine', () => {
    const project = join(scratch, 'p-inside');
    mkdirSync(join(project, 'real-claude'), { recursive: true });
    symlinkSync(join(project, 'real-claude'), join(project, '.claude'));
    expect(() =>
      assertWritesInsideProject(project, [
        { path: join(project, '.claude', 'settings.json'), before: null, after: '' },
      ]),
    ).not.toThrow();
    symlinkSync('/etc/hosts', join(project, '.mcp.json'));
    expect(() =>
      assertWritesInsideProject(project, [{ path: join(project, '.mcp.json'), before: null, after: '' }]),
    ).toThrow(/leads out of the project/);
  });
});
