// Builds web/dist for the browser tests when it is missing or older than its sources, safely when
// several test workers (or several vitest runs in one checkout) ask at once: one builds under a
// lock while the others wait and then find it fresh, and the page is built aside and moved in
// file by file, index.html last, so a `sluice serve` of another worker never serves half a build.
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// Imports nothing of the project, so it can run anywhere (a vitest globalSetup too).
const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const WEB = join(REPO_ROOT, 'web');
const DIST = join(WEB, 'dist');
/** One lock per checkout, where nothing is committed. */
export const PAGE_BUILD_LOCK = join(REPO_ROOT, 'node_modules/.cache/sluice-page-build.lock');
/** A build takes seconds; a holder this long is stuck (its process is checked first). */
const LOCK_DEADLINE_MS = 10 * 60_000;
const LOCK_POLL_MS = 100;

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newestMtime(join(path, entry))));
}

function isFresh(): boolean {
  const built = join(DIST, 'index.html');
  const sources = Math.max(
    newestMtime(join(WEB, 'src')),
    newestMtime(join(WEB, 'index.html')),
    newestMtime(join(WEB, 'public')),
    newestMtime(join(WEB, 'vite.config.ts')),
    // The one host module the page bundles (its other imports of src are types only).
    newestMtime(join(REPO_ROOT, 'src/core/reveal-invisible.ts')),
  );
  return existsSync(built) && statSync(built).mtimeMs >= sources;
}

/** Builds web/dist when it is missing or older than its sources; true when this call built it. */
export function ensurePageBuilt(): boolean {
  if (isFresh()) return false;
  return withBuildLock(() => {
    // Another worker may have built it while this one waited.
    if (isFresh()) return false;
    buildPage();
    return true;
  });
}

function buildPage(): void {
  const out = mkdtempSync(join(tmpdir(), 'sluice-page-'));
  try {
    const vite = join(REPO_ROOT, 'node_modules/vite/bin/vite.js');
    const result = spawnSync(
      process.execPath,
      [
        vite,
        'build',
        '--config',
        'web/vite.config.ts',
        '--logLevel',
        'warn',
        '--outDir',
        out,
        '--emptyOutDir',
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`vite build failed:\n${result.stdout}\n${result.stderr}`);
    // Assets have content-hashed names, so earlier builds' stay valid for a page already loaded;
    // index.html, which names the new ones, comes last.
    const files = listFiles(out).sort((a, b) => Number(a === 'index.html') - Number(b === 'index.html'));
    for (const file of files) moveInto(join(out, file), join(DIST, file));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? listFiles(path, base) : [relative(base, path)];
  });
}

/**
 * Copies beside the target, then renames over it: a reader sees the old file or the new one, and
 * even two builds at once (a lock taken over from a holder that only looked dead) leave a whole page.
 */
function moveInto(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  const aside = `${to}.${process.pid}.tmp`;
  copyFileSync(from, aside);
  renameSync(aside, to);
}

/** Runs `fn` holding the checkout's page-build lock (a file created exclusively, naming its pid). */
function withBuildLock<T>(fn: () => T): T {
  mkdirSync(dirname(PAGE_BUILD_LOCK), { recursive: true });
  const deadline = Date.now() + LOCK_DEADLINE_MS;
  for (;;) {
    try {
      const fd = openSync(PAGE_BUILD_LOCK, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (holderIsGone()) {
      rmSync(PAGE_BUILD_LOCK, { force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new Error(`${PAGE_BUILD_LOCK} is held too long; remove it if no build runs`);
    // A synchronous wait for the other process's build (this helper is synchronous).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, LOCK_POLL_MS);
  }
  try {
    return fn();
  } finally {
    unlinkSync(PAGE_BUILD_LOCK);
  }
}

/** Whether the lock's holder has died (a killed run leaves its lock behind). */
function holderIsGone(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(PAGE_BUILD_LOCK, 'utf8'));
  } catch {
    return false; // released meanwhile, or still being written: try again
  }
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
