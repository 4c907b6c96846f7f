// Installs the real agent clients on demand into <repo>/.cache/clients (gitignored).
// Pinned versions: see docs/e2e-clients.md for why these and what runs on Node 20.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLAUDE_CODE_VERSION = '2.1.332';
export const CODEX_VERSION = '0.171.0';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const CLIENTS_DIR = join(REPO_ROOT, '.cache', 'clients');

const LOCK_DIR = join(CLIENTS_DIR, '.install.lock');
const LOCK_STALE_MS = 10 * 60_000;
const INSTALL_TIMEOUT_MS = 8 * 60_000;

export interface ClientPaths {
  /** Native Claude Code binary (no Node.js needed at run time). */
  claude: string;
  /** Native Codex binary (the npm `codex` JS wrapper only execs this). */
  codex: string;
}

function codexTriple(): string {
  const a = process.arch === 'arm64' ? 'aarch64' : 'x86_64';
  if (process.platform === 'linux') return `${a}-unknown-linux-musl`;
  if (process.platform === 'darwin') return `${a}-apple-darwin`;
  throw new Error(`unsupported platform for codex: ${process.platform}`);
}

export function clientPaths(dir = CLIENTS_DIR): ClientPaths {
  const nm = join(dir, 'node_modules');
  const plat = process.platform === 'darwin' ? 'darwin' : 'linux';
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  return {
    // The postinstall copies/links the platform binary over bin/claude.exe; fall back to the
    // platform package itself when install scripts were not run.
    claude: existsSync(join(nm, `@anthropic-ai/claude-code-${plat}-${arch}`, 'claude'))
      ? join(nm, `@anthropic-ai/claude-code-${plat}-${arch}`, 'claude')
      : join(nm, '@anthropic-ai/claude-code/bin/claude.exe'),
    codex: join(nm, `@openai/codex-${plat}-${arch}`, 'vendor', codexTriple(), 'bin', 'codex'),
  };
}

function installedVersion(dir: string, pkg: string): string | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/**
 * Written last, under the lock, once npm has finished: until then a binary can be complete in
 * size but still open for writing, and running it fails with "Text file busy" (seen in a clean
 * clone's CI, where one worker installs while another starts a test).
 */
const INSTALLED_MARKER = join(CLIENTS_DIR, '.installed');
const INSTALLED_TEXT = `claude-code ${CLAUDE_CODE_VERSION} codex ${CODEX_VERSION}\n`;

function isInstalled(dir: string): boolean {
  return markerMatches() && filesInPlace(dir);
}

function markerMatches(): boolean {
  try {
    return readFileSync(INSTALLED_MARKER, 'utf8') === INSTALLED_TEXT;
  } catch {
    return false;
  }
}

function filesInPlace(dir: string): boolean {
  const p = clientPaths(dir);
  return (
    installedVersion(dir, '@anthropic-ai/claude-code') === CLAUDE_CODE_VERSION &&
    installedVersion(dir, '@openai/codex') === CODEX_VERSION &&
    existsSync(p.claude) &&
    statSync(p.claude).size > 1_000_000 &&
    existsSync(p.codex)
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function acquireLock(): Promise<void> {
  mkdirSync(CLIENTS_DIR, { recursive: true });
  const deadline = Date.now() + INSTALL_TIMEOUT_MS + 60_000;
  for (;;) {
    try {
      mkdirSync(LOCK_DIR);
      return;
    } catch (e: any) {
      if (e.code !== 'EEXIST') throw e;
      try {
        if (Date.now() - statSync(LOCK_DIR).mtimeMs > LOCK_STALE_MS) {
          rmSync(LOCK_DIR, { recursive: true, force: true });
          continue;
        }
      } catch {
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${LOCK_DIR}`);
      await sleep(500);
    }
  }
}

function npmInstall(): Promise<void> {
  const args = [
    'install',
    '--prefix',
    CLIENTS_DIR,
    '--no-save',
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
    `@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}`,
    `@openai/codex@${CODEX_VERSION}`,
  ];
  return new Promise((resolvePromise, reject) => {
    const child = spawn('npm', args, { cwd: CLIENTS_DIR, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
    });
    child.stderr!.on('data', (d) => {
      out += d;
    });
    const t = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    }, INSTALL_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(t);
      if (code === 0) resolvePromise();
      else reject(new Error(`npm install of agent clients failed (${code}):\n${out.slice(-4000)}`));
    });
  });
}

/** Install the pinned clients into .cache/clients if missing; return absolute binary paths. */
export async function ensureClients(): Promise<ClientPaths> {
  if (isInstalled(CLIENTS_DIR)) return clientPaths();
  await acquireLock();
  try {
    // Holding the lock, nobody else is writing: files already in place only need the marker.
    if (!filesInPlace(CLIENTS_DIR)) {
      rmSync(INSTALLED_MARKER, { force: true });
      // A fresh machine downloads ~800 MB here; say so rather than look hung.
      process.stderr.write(
        `[sluice tests] installing claude ${CLAUDE_CODE_VERSION} and codex ${CODEX_VERSION} into ${CLIENTS_DIR} (~800 MB, once)\n`,
      );
      await npmInstall();
    }
    if (!filesInPlace(CLIENTS_DIR))
      throw new Error(`agent clients still missing after install in ${CLIENTS_DIR}`);
    writeFileSync(INSTALLED_MARKER, INSTALLED_TEXT);
  } finally {
    rmSync(LOCK_DIR, { recursive: true, force: true });
  }
  return clientPaths();
}
