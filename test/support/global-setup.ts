// The suite's own temporary folder: every test file runs with TMPDIR pointing into a fresh folder
// of this run, removed whole when the run ends (SLUICE_TEST_TMP_LEFTOVERS=fail fails the run on
// anything left in it, naming it). The machine's /tmp is
// checked for the entries a stray tool leaves at its top (`.git`, `.codex`, `.agents`: an empty
// `/tmp/.git` makes Claude Code treat /tmp as the repository of every folder under it): the empty
// ones the run caused are removed, anything else fails the run.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const WATCHED_TMP_ENTRIES = ['.git', '.codex', '.agents'];

/** Removes `path` when it is an empty folder; true when it did. */
function removedIfEmptyDir(path: string): boolean {
  try {
    rmdirSync(path);
    return true;
  } catch {
    return false;
  }
}

export default function setup(): () => void {
  const systemTmp = tmpdir();
  const run = mkdtempSync(join(systemTmp, 'sluice-test-run-'));
  const tmp = join(run, 'tmp');
  mkdirSync(tmp, { mode: 0o700 });
  // Others may pass through (not list): a test's own PostgreSQL cluster runs as the `postgres`
  // user when the suite runs as root, in a folder it owns below these (test/support/pg-cluster.ts).
  chmodSync(run, 0o711);
  chmodSync(tmp, 0o711);
  const before = new Set(WATCHED_TMP_ENTRIES.filter((name) => existsSync(join(systemTmp, name))));
  const previous = process.env.TMPDIR;
  // Workers are forked after this and inherit it; os.tmpdir() reads TMPDIR.
  process.env.TMPDIR = tmp;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    const left = readdirSync(tmp);
    // Codex's sandbox (bubblewrap) makes empty `.git`, `.codex` and `.agents` mount targets in
    // every writable root, /tmp included, to keep them read-only for the model, and never removes
    // them (docs/drivers.md). The run removes the empty ones it caused; anything else is a stray.
    const strays = WATCHED_TMP_ENTRIES.filter(
      (name) =>
        !before.has(name) && existsSync(join(systemTmp, name)) && !removedIfEmptyDir(join(systemTmp, name)),
    );
    rmSync(run, { recursive: true, force: true });
    const problems: string[] = [];
    // Whatever the tests left in their own folder goes with it. Many real-client tests keep their
    // client homes until the run ends; SLUICE_TEST_TMP_LEFTOVERS=fail lists them, for clean-up work.
    if (left.length > 0 && process.env.SLUICE_TEST_TMP_LEFTOVERS === 'fail')
      problems.push(
        `tests left ${left.length} entr${left.length === 1 ? 'y' : 'ies'} in their temporary folder: ${left.slice(0, 10).join(', ')}${left.length > 10 ? ', …' : ''}`,
      );
    if (strays.length > 0)
      problems.push(`something in this run created ${strays.map((n) => join(systemTmp, n)).join(', ')}`);
    if (problems.length > 0) {
      // Vitest reports an error thrown here but still exits 0: the run fails through the exit code.
      process.stderr.write(`\n[sluice tests] FAIL: ${problems.join('; ')} (test/support/global-setup.ts)\n`);
      process.exitCode = 1;
    }
  };
}
