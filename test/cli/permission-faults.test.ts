// A home or database the user may not use (another user's 0700 folder, a read-only folder, one
// whose mode the user cannot tighten) is one line naming the refused path and saying it is a
// permission problem, exit 1, and nothing changed: before, the SQLite open said only "unable to
// open database file" and a read-only home or a chmod refused was an internal error (exit 70).
// Run through the built CLI (`npm run build` first) as another user: as root, the CLI runs as
// `nobody` against root's folders; otherwise as this user against folders chmod'ed shut.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCli, SLUICE_BIN } from '../support/host.js';

const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

/** The CLI as the user the folders are closed to (nobody under root). */
function runRefused(args: readonly string[], home: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, '--home', home, ...args], {
      env: { ...process.env, HOME: home, SLUICE_HOME: '', SLUICE_AS: '', SLUICE_DB: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(isRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        code: code ?? -1,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
      }),
    );
  });
}

/** Every file under `dir` with its size, mode and modification time: "nothing changed" compares these. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .sort()
    .map((name) => {
      const st = statSync(join(dir, name));
      return `${name} ${st.size} ${(st.mode & 0o777).toString(8)} ${st.mtimeMs}`;
    });
}

describe('a home the user may not use', { timeout: 120_000 }, () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'sluice-perm-'));
    // The other user must reach the folders under it (mkdtemp makes 0700).
    chmodSync(root, 0o755);
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  /** A home with a database, made by this user, then shut to the refused user by `shut`. */
  async function homeWith(name: string, shut: (home: string) => void): Promise<string> {
    const home = join(root, name);
    const made = await runCli(['init'], { home });
    expect(made.code, made.stderr).toBe(0);
    shut(home);
    return home;
  }

  const expectRefused = (r: CliResult, line: RegExp) => {
    expect(r.stderr).toMatch(line);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(r.code).toBe(1);
  };

  it("another user's 0700 home: the read names the home it cannot open, and nothing changes", async () => {
    const home = await homeWith('private', (h) => {
      chmodSync(h, isRoot ? 0o700 : 0o000);
    });
    try {
      chmodSync(home, 0o700);
      const before = listing(home);
      chmodSync(home, isRoot ? 0o700 : 0o000);
      const r = await runRefused(['message', 'ls'], home);
      expectRefused(r, new RegExp(`^sluice: unavailable: cannot open ${home} \\(permission denied\\)\n$`));
      chmodSync(home, 0o700);
      expect(listing(home)).toEqual(before);
    } finally {
      chmodSync(home, 0o700);
    }
  });

  it('a read-only home: a send names the folder it cannot write, and nothing changes', async () => {
    const home = await homeWith('readonly', (h) => {
      if (isRoot) {
        chownSync(h, NOBODY, NOBODY);
        for (const name of readdirSync(h, { recursive: true, encoding: 'utf8' }))
          chownSync(join(h, name), NOBODY, NOBODY);
      }
    });
    const before = listing(home);
    chmodSync(home, 0o500);
    try {
      const send = await runRefused(['message', 'send', 'owner', '-m', 'hi'], home);
      expectRefused(
        send,
        new RegExp(`^sluice: unavailable: cannot write ${home} \\(permission denied\\)\n$`),
      );
      const ls = await runRefused(['message', 'ls'], home);
      expectRefused(ls, new RegExp(`^sluice: unavailable: cannot write ${home} \\(permission denied\\)\n$`));
    } finally {
      chmodSync(home, 0o700);
    }
    expect(listing(home)).toEqual(before);
  });

  it.skipIf(!isRoot)(
    "another user's home open to others (0755): the CLI cannot tighten it and says so",
    async () => {
      const home = await homeWith('open', (h) => {
        chmodSync(h, 0o755);
      });
      const before = listing(home);
      const r = await runRefused(['message', 'ls'], home);
      expectRefused(
        r,
        new RegExp(`^sluice: unavailable: cannot chmod 0700 the home ${home} \\(permission denied\\)\n$`),
      );
      expect(listing(home)).toEqual(before);
    },
  );

  it('a home that cannot be created under a folder shut to the user', async () => {
    const shut = join(root, 'shut');
    const made = await runCli(['init'], { home: shut });
    expect(made.code).toBe(0);
    chmodSync(shut, isRoot ? 0o700 : 0o500);
    try {
      const r = await runRefused(['init'], join(shut, 'new'));
      expectRefused(
        r,
        new RegExp(
          `^sluice: unavailable: cannot create the home ${join(shut, 'new')} \\(permission denied\\)\n$`,
        ),
      );
    } finally {
      chmodSync(shut, 0o700);
    }
    expect(readdirSync(shut)).not.toContain('new');
  });

  it('a home on a read-only mount: a send says read-only file system and names the file, and nothing changes', async (t) => {
    const home = await homeWith('mounted-source', () => undefined);
    const mounted = join(root, 'read-only');
    mkdirSync(mounted);
    try {
      execFileSync('mount', ['--bind', '-o', 'ro', home, mounted], { stdio: 'pipe' });
    } catch (err) {
      const stderr = String((err as { stderr?: unknown }).stderr ?? err);
      t.skip(`cannot mount read-only here (${stderr.split('\n')[0]})`);
      return;
    }
    try {
      const before = listing(home);
      const r = await runCli(['message', 'send', 'owner', '-m', 'hi'], { home: mounted });
      expectRefused(
        r,
        new RegExp(`^sluice: unavailable: cannot write ${mounted}/sluice.db \\(read-only file system\\)\n$`),
      );
      expect(listing(home)).toEqual(before);
    } finally {
      execFileSync('umount', ['-l', mounted], { stdio: 'pipe' });
    }
  });
});
