// Shared by the browser tests: build the page, run `sluice serve`, launch Debian's Chromium, sign in.
// (browser.e2e.test.ts predates this module and keeps its own copies.)

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { REPO_ROOT, runCli, SLUICE_BIN } from '../support/host.js';

export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts/web');
const WEB = join(REPO_ROOT, 'web');

/** Playwright-core has no auto-waiting assertions; poll the page instead. */
export const POLL = { timeout: 10_000, interval: 50 };

export const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800, isMobile: false },
  { name: 'phone', width: 390, height: 844, isMobile: true },
] as const;

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newestMtime(join(path, entry))));
}

/** Builds web/dist when it is missing or older than its sources. */
export function ensurePageBuilt(): void {
  const built = join(WEB, 'dist/index.html');
  const sources = Math.max(
    newestMtime(join(WEB, 'src')),
    newestMtime(join(WEB, 'index.html')),
    newestMtime(join(WEB, 'vite.config.ts')),
  );
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return;
  const vite = join(REPO_ROOT, 'node_modules/vite/bin/vite.js');
  const result = spawnSync(
    process.execPath,
    [vite, 'build', '--config', 'web/vite.config.ts', '--logLevel', 'warn'],
    { cwd: REPO_ROOT, encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`vite build failed:\n${result.stdout}\n${result.stderr}`);
}

export interface Served {
  process: ChildProcess;
  origin: string;
  loginLink: string;
}

/** Starts `sluice serve --port 0` and waits for the line with the login link. */
export function startServe(home: string): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '', SLUICE_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`serve did not print a login link:\n${out}\n${err}`)),
      20_000,
    );
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const link = /Login link: (\S+)/.exec(out)?.[1];
      if (link) {
        clearTimeout(timer);
        resolve({ process: child, origin: new URL(link).origin, loginLink: link });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${out}\n${err}`));
    });
  });
}

export async function stopServe(server: Served): Promise<void> {
  if (server.process.exitCode !== null) return;
  server.process.kill('SIGTERM');
  await new Promise((r) => server.process.once('exit', r));
}

export async function cli(home: string, args: string[], input?: string): Promise<string> {
  const result = await runCli(args, { home, ...(input !== undefined ? { input } : {}) });
  if (result.code !== 0)
    throw new Error(`sluice ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return result.stdout.trim();
}

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Opens a single-use login link and presses the button that signs in. */
export async function signIn(page: Page, link: string, as = 'owner'): Promise<void> {
  await page.goto(link);
  await page.getByRole('button', { name: `Sign in as ${as}` }).click();
  await page.waitForURL((u) => u.pathname === '/' && !u.search.includes('code='));
}
