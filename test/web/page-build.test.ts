// Test workers (and vitest runs in one checkout) that find the page stale at once: one builds, the
// others wait for it and find it fresh; a lock left by a killed run is taken over.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'rolldown';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_BUILD_LOCK } from './page-build.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const DIST = join(HERE, '../../web/dist');
// Beside the source, so the helper finds the checkout from where it runs.
const BUNDLE = join(HERE, `.page-build-${process.pid}.mjs`);

/** Runs ensurePageBuilt in a process of its own; resolves with whether that process built. */
function buildInChild(): Promise<boolean> {
  const script = `import { ensurePageBuilt } from ${JSON.stringify(pathToFileURL(BUNDLE).href)};\nprocess.stdout.write(String(ensurePageBuilt()));\n`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('close', (code) =>
      code === 0 ? resolve(out === 'true') : reject(new Error(`exit ${code}: ${err}`)),
    );
  });
}

/** Makes the built page older than its sources (dated 2000-01-01). */
const STALE_SECONDS = 946_684_800;
const makeStale = () => utimesSync(join(DIST, 'index.html'), STALE_SECONDS, STALE_SECONDS);
/** The page was built again since {@link makeStale}. */
const rebuilt = () => statSync(join(DIST, 'index.html')).mtimeMs > STALE_SECONDS * 1000;

/** index.html and every asset it names are there. */
function pageIsWhole(): boolean {
  const html = readFileSync(join(DIST, 'index.html'), 'utf8');
  const assets = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)].map((m) => m[1] as string);
  return assets.length > 0 && assets.every((a) => existsSync(join(DIST, a)));
}

describe('building the page for the browser tests', { timeout: 120_000 }, () => {
  beforeAll(async () => {
    await build({
      input: join(HERE, 'page-build.ts'),
      platform: 'node',
      logLevel: 'warn',
      output: { file: BUNDLE, format: 'esm' },
    });
    // Fresh or stale, there is a page to start from.
    if (!existsSync(join(DIST, 'index.html'))) expect(await buildInChild()).toBe(true);
  });
  afterAll(() => rmSync(BUNDLE, { force: true }));

  it('three processes that find it stale at once build it once, and the page is whole', async () => {
    makeStale();
    const built = await Promise.all([buildInChild(), buildInChild(), buildInChild()]);
    // At most one of them built: a browser test in another worker of this run may have found the
    // page stale first and built it (then none of the three did), but never two builds.
    expect(built.filter(Boolean).length).toBeLessThanOrEqual(1);
    expect(rebuilt()).toBe(true);
    expect(pageIsWhole()).toBe(true);
    expect(existsSync(PAGE_BUILD_LOCK)).toBe(false);
  });

  it('a lock left by a process that died is taken over', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    writeFileSync(PAGE_BUILD_LOCK, String(dead));
    makeStale();
    // The child builds, or a browser test in another worker of this run took the lock over and
    // built first: either way the dead holder did not stop the page from being built.
    await buildInChild();
    expect(rebuilt()).toBe(true);
    expect(pageIsWhole()).toBe(true);
    expect(existsSync(PAGE_BUILD_LOCK)).toBe(false);
  });
});
