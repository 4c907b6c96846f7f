// Shared by the browser tests: build the page, run `sluice serve`, launch Debian's Chromium, sign in,
// open a context per viewport and collect the page's problems.

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { addAgentManager } from '../../src/host/agents/agent-managers.js';
import { createChannel } from '../../src/host/channels/channels.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { openHost } from '../../src/host/identity/home.js';
import { addPrincipal, resolveAgent, resolvePrincipal } from '../../src/host/identity/principals.js';
import { issueLoginCode } from '../../src/host/identity/sessions.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { channelRead } from '../../src/host/reads/index.js';
import { beginTurn, endTurn, receivedInProcess } from '../../src/host/turns/index.js';
import { REPO_ROOT, runCli, SLUICE_BIN } from '../support/host.js';
import { ensurePageBuilt } from './page-build.js';

export const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts/web');

/**
 * Screenshots are for a person (docs/web.md's gallery, scripts/docs-screenshots.sh) and no test
 * asserts on them; encoding a PNG per step costs Chromium CPU in every run, so they are taken only
 * with SLUICE_SCREENSHOTS=1.
 */
export const SCREENSHOTS = process.env.SLUICE_SCREENSHOTS === '1';

/** Writes test-artifacts/web/<name>.png when SLUICE_SCREENSHOTS=1; otherwise does nothing. */
export async function screenshot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<void> {
  if (!SCREENSHOTS) return;
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), ...options });
}

/** Playwright-core has no auto-waiting assertions; poll the page instead. */
export const POLL = { timeout: 10_000, interval: 50 };

export const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800, isMobile: false },
  { name: 'phone', width: 390, height: 844, isMobile: true },
] as const;

export { ensurePageBuilt };

export interface Served {
  process: ChildProcess;
  origin: string;
  loginLink: string;
  stderr: () => string;
}

/** Starts `sluice serve --port <port>` (any free port by default) and waits for the login link. */
export function startServe(home: string, port = 0): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', String(port)], {
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
        resolve({ process: child, origin: new URL(link).origin, loginLink: link, stderr: () => err });
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

/** A seeded home served by `sluice serve`, the host API on it in this process, and Chromium. */
export interface Stage {
  home: string;
  served: Served;
  hostCtx: HostContext;
  browser: Browser;
}

/**
 * What a stage is seeded with, through the host API in this process: the same calls `sluice agent
 * add`, `person add`, `channel create` and `message send` make as the owner, without a CLI process
 * per row (a second or more each on a loaded machine). Tests that need another process's write
 * still run the CLI.
 */
export const seedAs = {
  agent: (ctx: HostContext, name: string, settlement: 'explicit' | 'turn' = 'explicit') =>
    addPrincipal(ctx, { name, kind: 'agent', settlement }),
  person: (ctx: HostContext, name: string) => addPrincipal(ctx, { name, kind: 'person' }),
  /** `sluice agent manage AGENT PERSON`: only an agent's managers add it to a group. */
  manager: async (ctx: HostContext, agent: string, person: string) =>
    addAgentManager(ctx, await resolvePrincipal(ctx, 'owner'), agent, person),
  channel: async (ctx: HostContext, name: string, members: string[]) =>
    createChannel(ctx, await resolvePrincipal(ctx, 'owner'), { name, members }),
  message: async (ctx: HostContext, to: string, body: string) =>
    sendMessage(ctx, await resolvePrincipal(ctx, 'owner'), { to, body }),
};

/**
 * Builds the page, makes a temp home (`sluice init`), opens the host API on it, seeds it with
 * `seed`, then serves it while Chromium starts. What was opened is closed again if a step fails.
 */
export async function openStage(
  prefix: string,
  seed: (home: string, ctx: HostContext) => Promise<void>,
): Promise<Stage> {
  if (!existsSync(join(REPO_ROOT, 'dist/src/surfaces/cli/main.js')))
    throw new Error('run npm run build first');
  ensurePageBuilt();
  if (SCREENSHOTS) mkdirSync(ARTIFACTS, { recursive: true });
  const opened: Partial<Stage> = { home: mkdtempSync(join(tmpdir(), prefix)) };
  try {
    const home = opened.home as string;
    await cli(home, ['init']);
    opened.hostCtx = await openHost({ home, durability: 'normal', pollMs: 20 });
    await seed(home, opened.hostCtx);
    // Both only wait for a process to start: side by side.
    const [served, browser] = await Promise.allSettled([startServe(home), launchChromium()]);
    if (served.status === 'fulfilled') opened.served = served.value;
    if (browser.status === 'fulfilled') opened.browser = browser.value;
    if (served.status === 'rejected') throw served.reason;
    if (browser.status === 'rejected') throw browser.reason;
    return opened as Stage;
  } catch (err) {
    await closeStage(opened);
    throw err;
  }
}

export async function closeStage(stage: Partial<Stage>): Promise<void> {
  await stage.browser?.close();
  await stage.hostCtx?.store.close();
  if (stage.served) await stopServe(stage.served);
  if (stage.home) rmSync(stage.home, { recursive: true, force: true });
}

/**
 * The stage for one test file: opened before its tests (seeding may take minutes on a loaded
 * machine) and closed after them. Its fields are there once the file's first `beforeAll` has run.
 */
export function useStage(prefix: string, seed: (home: string, ctx: HostContext) => Promise<void>): Stage {
  const stage = {} as Stage;
  beforeAll(async () => {
    Object.assign(stage, await openStage(prefix, seed));
  }, 300_000);
  afterAll(async () => {
    if (stage.home) await closeStage(stage);
  });
  return stage;
}

/** A fresh single-use login link for a person (the owner by default). */
export async function loginLinkFor(stage: Stage, person = 'owner'): Promise<string> {
  return `${stage.served.origin}/login?code=${(await issueLoginCode(stage.hostCtx, person)).code}`;
}

export type View = (typeof VIEWPORTS)[number];

/** A context at a viewport's size; `bypassCSP` only so axe-core's source can be injected. */
export function newViewContext(
  browser: Browser,
  view: View,
  options: { bypassCSP?: boolean } = {},
): Promise<BrowserContext> {
  return browser.newContext({
    viewport: { width: view.width, height: view.height },
    isMobile: view.isMobile,
    hasTouch: view.isMobile,
    deviceScaleFactor: 1,
    ...(options.bypassCSP ? { bypassCSP: true } : {}),
  });
}

/**
 * Collects what went wrong on a page into `problems`: uncaught page errors always; console errors
 * with `console` ('except-favicon' skips the favicon Chromium asks for now and then); HTTP error
 * responses with `http`.
 */
export function collectProblems(
  page: Page,
  problems: string[],
  options: { console?: 'all' | 'except-favicon'; http?: boolean } = {},
): void {
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  if (options.console) {
    const skipFavicon = options.console === 'except-favicon';
    page.on('console', (msg) => {
      if (msg.type() !== 'error') return;
      if (skipFavicon && msg.location().url.endsWith('/favicon.ico')) return;
      problems.push(`console: ${msg.text()} at ${msg.location().url}`);
    });
  }
  if (options.http)
    page.on('response', (res) => {
      if (res.status() >= 400) problems.push(`HTTP ${res.status()} for ${res.url()}`);
    });
}

/** A failed turn that carried the agent's pending messages: they come back as returned cards. */
export async function failTurnOver(
  ctx: HostContext,
  agentName: string,
  reason = 'the model server answered 529',
): Promise<void> {
  const agent = await resolveAgent(ctx, agentName);
  const turn = await beginTurn(ctx, agent);
  // This process is the reader, so the read counts as received at once.
  await receivedInProcess(ctx, await channelRead(ctx, agent, { unread: true, limit: 20 }));
  await endTurn(ctx, agent, turn.id, { ok: false, kind: 'model_error', reason });
}
