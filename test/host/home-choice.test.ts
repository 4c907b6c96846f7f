// Which folder is the home, and what Sluice may do to it. An empty `--home ""` or `SLUICE_HOME=""`
// meant the current directory (a database appeared wherever the user stood), and an existing
// folder open to others was chmodded to 0700 whatever it was: `--home ~/projects` took the group's
// access away from a user's unrelated folder. Now empty is a usage error, and only a folder that
// is empty or already a Sluice home is tightened; any other is refused, its mode unchanged.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { securePrivateHome } from '../../src/host/identity/home.js';
import { SLUICE_BIN, tempHome } from '../support/host.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function scratch(): string {
  const { home, cleanup } = tempHome('sluice-home-choice-');
  cleanups.push(cleanup);
  return home;
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** The CLI in `cwd`, with `env` over a clean SLUICE_* environment. */
function sluice(args: string[], cwd: string, env: Record<string, string> = {}) {
  const { SLUICE_HOME: _h, SLUICE_AS: _a, SLUICE_DB: _d, ...rest } = process.env;
  const run = spawnSync(process.execPath, [SLUICE_BIN, ...args], {
    cwd,
    env: { ...rest, HOME: cwd, ...env },
    encoding: 'utf8',
    // A hang is the failure some of these guard against: killed, it has no exit status.
    timeout: 30_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('an empty home is a usage error', () => {
  for (const [how, args, env] of [
    ['SLUICE_HOME=""', ['init'], { SLUICE_HOME: '' }],
    ['--home ""', ['init', '--home', ''], {}],
    ['--home "" on a command that needs a home', ['channel', 'ls', '--home', ''], {}],
  ] as const) {
    it(`${how}: one coded line, nothing made in the current directory`, () => {
      const cwd = scratch();
      const run = sluice([...args], cwd, env);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^sluice: invalid_params: [^\n]*empty[^\n]*\n$/);
      expect(readdirSync(cwd)).toEqual([]);
    });
  }
});

describe('only a Sluice home is tightened', () => {
  it('refuses a folder open to others that holds other things, and leaves its mode', () => {
    const folder = join(scratch(), 'projects');
    mkdirSync(folder);
    writeFileSync(join(folder, 'notes.txt'), 'mine');
    chmodSync(folder, 0o755);
    const lines: string[] = [];
    expect(() => securePrivateHome(folder, (l) => lines.push(l))).toThrow(
      expect.objectContaining({ code: 'invalid_params' }),
    );
    expect(mode(folder)).toBe('755');
    expect(lines).toEqual([]);
  });

  it('the CLI refuses it in one line and makes nothing there', () => {
    const cwd = scratch();
    const folder = join(cwd, 'projects');
    mkdirSync(folder);
    writeFileSync(join(folder, 'notes.txt'), 'mine');
    chmodSync(folder, 0o755);
    const run = sluice(['init', '--home', folder], cwd);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^sluice: invalid_params: [^\n]*does not look like a Sluice home[^\n]*\n$/);
    expect(mode(folder)).toBe('755');
    expect(readdirSync(folder)).toEqual(['notes.txt']);
  });

  it('tightens a Sluice home from an older version (its database there) with a notice', () => {
    const home = join(scratch(), 'home');
    mkdirSync(home);
    writeFileSync(join(home, 'sluice.db'), '');
    chmodSync(home, 0o755);
    const lines: string[] = [];
    securePrivateHome(home, (l) => lines.push(l));
    expect(mode(home)).toBe('700');
    expect(lines).toHaveLength(1);
  });

  // A home used only with PostgreSQL has no sluice.db and no blobs folder (blobs live in the
  // database): what it holds is Sluice's own folders and logs. Such a home at 0755 was refused.
  it.each([
    ['its logs', ['logs/serve.log']],
    ['its error log', ['logs/errors.log']],
    ['a driver folder', ['drivers/bot/']],
    ['materialised attachments', ['materialized/']],
    ['hook sessions', ['hook-sessions/']],
  ])('tightens a PostgreSQL home holding only %s', (_, paths) => {
    const home = join(scratch(), 'home');
    mkdirSync(home);
    for (const path of paths) {
      if (path.endsWith('/')) mkdirSync(join(home, path), { recursive: true });
      else {
        mkdirSync(join(home, path, '..'), { recursive: true });
        writeFileSync(join(home, path), '');
      }
    }
    chmodSync(home, 0o755);
    const lines: string[] = [];
    securePrivateHome(home, (l) => lines.push(l));
    expect(mode(home)).toBe('700');
    expect(lines).toHaveLength(1);
  });

  it('a folder of the user holding a plain logs folder is still not taken for a home', () => {
    const folder = join(scratch(), 'project');
    mkdirSync(join(folder, 'logs'), { recursive: true });
    writeFileSync(join(folder, 'logs', 'app.log'), '');
    chmodSync(folder, 0o755);
    expect(() => securePrivateHome(folder, () => undefined)).toThrow(/does not look like a Sluice home/);
    expect(mode(folder)).toBe('755');
  });

  it('leaves a private folder of any content alone, and a missing one to be made', () => {
    const folder = join(scratch(), 'private');
    mkdirSync(folder, { mode: 0o700 });
    writeFileSync(join(folder, 'notes.txt'), 'mine');
    expect(() => securePrivateHome(folder, () => {})).not.toThrow();
    expect(() => securePrivateHome(join(folder, 'absent'), () => {})).not.toThrow();
    expect(existsSync(join(folder, 'absent'))).toBe(false);
  });
});

// Node's recursive mkdir never returns on procfs (`mkdir -p /proc/1/x` loops on ENOENT), so
// `init --home /proc/1/x` hung. Folders are now made one level at a time.
describe.skipIf(!existsSync('/proc/1'))('a home where no folder can be made', () => {
  for (const args of [
    ['init', '--home', '/proc/1/x'],
    ['init', '--home', '/proc/1/x/y/z'],
    ['init', '--db', '/proc/1/x/sluice.db'],
  ]) {
    it(`${args.join(' ')}: one coded line, at once`, () => {
      const cwd = scratch();
      const run = sluice(args, cwd, args[1] === '--db' ? { SLUICE_HOME: join(cwd, 'home') } : {});
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^sluice: (invalid_params|unavailable): [^\n]*\/proc\/1\/x[^\n]*\n$/);
    }, 60_000);
  }
});
