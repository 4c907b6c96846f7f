// The web page in a real browser against a real `sluice serve`: Debian's Chromium driven by
// playwright-core (never a downloaded browser), a temp home made by `sluice init` and seeded through
// the host API, and writes made from other processes (the CLI, and the host API in this test
// process) reaching the page live.
// Screenshots land in test-artifacts/web/ for a person to look at (with SLUICE_SCREENSHOTS=1).

import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { openHost } from '../../src/host/identity/home.js';
import { resolveAgent, resolvePrincipal } from '../../src/host/identity/principals.js';
import { issueLoginCode } from '../../src/host/identity/sessions.js';
import { readProjection, sendMessage } from '../../src/host/messages/messages.js';
import { listInbox } from '../../src/host/queue/inbox.js';
import { queueSummary } from '../../src/host/queue/queue.js';
import { REPO_ROOT } from '../support/host.js';
import {
  ARTIFACTS,
  cli,
  collectProblems,
  ensurePageBuilt,
  failTurnOver,
  launchChromium,
  newViewContext,
  POLL,
  SCREENSHOTS,
  type Served,
  screenshot,
  seedAs,
  signIn as signInWith,
  startServe,
  stopServe,
  VIEWPORTS,
} from './browser-support.js';

/** The scrolling element behind a locator, typed by what the tests touch (no DOM lib here). */
type Scrollable = { scrollTop: number; scrollHeight: number; clientHeight: number };

/** Every visible interactive element smaller than 44×44 px (phone touch targets). */
async function smallTouchTargets(page: Page): Promise<string[]> {
  const small: string[] = [];
  const controls = page.locator('button:visible, a[href]:visible, select:visible, textarea:visible');
  for (const control of await controls.all()) {
    const box = await control.boundingBox();
    if (box && (box.height < 43.5 || box.width < 43.5)) {
      const label = ((await control.textContent()) ?? '').trim().slice(0, 30);
      small.push(`${label || (await control.evaluate((el) => el.tagName))} ${box.width}x${box.height}`);
    }
  }
  return small;
}

/** A 160×90 PNG like a small screenshot: a blue field with a white block. */
async function screenshotPng(): Promise<Buffer> {
  const block = await sharp({ create: { width: 60, height: 50, channels: 3, background: '#ffffff' } })
    .png()
    .toBuffer();
  return sharp({ create: { width: 160, height: 90, channels: 3, background: '#2557d6' } })
    .composite([{ input: block, left: 20, top: 20 }])
    .png()
    .toBuffer();
}

/**
 * The page-side constructors the paste needs. The root tsconfig has no DOM library (this file runs
 * under Node), so the in-page code names only what it uses.
 */
interface PageGlobals {
  atob(text: string): string;
  File: new (parts: unknown[], name: string, options: { type: string }) => unknown;
  DataTransfer: new () => { items: { add(file: unknown): void } };
  ClipboardEvent: new (type: string, init: Record<string, unknown>) => unknown;
  DragEvent: new (type: string, init: Record<string, unknown>) => unknown;
}

/** `fetch` as the page has it (the root tsconfig has no DOM library). */
interface InPageFetch {
  fetch(
    url: string,
    init?: { method?: string; headers?: Record<string, string>; body?: string },
  ): Promise<{ status: number; json(): Promise<unknown>; text(): Promise<string> }>;
}

let home: string;
let served: Served;
let browser: Browser;
let hostCtx: HostContext;

beforeAll(async () => {
  if (!existsSync(join(REPO_ROOT, 'dist/src/surfaces/cli/main.js')))
    throw new Error('run npm run build first');
  ensurePageBuilt();
  if (SCREENSHOTS) mkdirSync(ARTIFACTS, { recursive: true });
  home = mkdtempSync(join(tmpdir(), 'sluice-web-'));
  await cli(home, ['init']);
  hostCtx = await openHost({ home, durability: 'normal', pollMs: 20 });
  // Through the host API (what the CLI's commands call), not a CLI process per row.
  for (const view of VIEWPORTS) {
    await seedAs.agent(hostCtx, `helper-${view.name}`);
    await seedAs.agent(hostCtx, `worker-${view.name}`, 'turn');
    await seedAs.channel(hostCtx, `team-${view.name}`, [`helper-${view.name}`]);
    await seedAs.channel(hostCtx, `ops-${view.name}`, [`worker-${view.name}`]);
    await seedAs.person(hostCtx, `reader-${view.name}`);
    await seedAs.channel(hostCtx, `long-${view.name}`, [`reader-${view.name}`]);
    await seedAs.agent(hostCtx, `bulk-${view.name}`);
    await seedAs.channel(hostCtx, `bulk-${view.name}`, [`bulk-${view.name}`]);
    await seedAs.message(
      hostCtx,
      `#team-${view.name}`,
      `Welcome to team-${view.name}. 👋 CJK 中文 and "quotes"`,
    );
  }
  // Both only wait for a process to start: side by side.
  [served, browser] = await Promise.all([startServe(home), launchChromium()]);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await hostCtx?.store.close();
  if (served) await stopServe(served);
  if (home) rmSync(home, { recursive: true, force: true });
});

let printedLinkUsed = false;

/**
 * Signs the page in the way a person does: opens a login link (a fresh single-use one unless
 * given), and presses the button that POSTs it.
 */
async function signIn(page: Page, link?: string): Promise<void> {
  await signInWith(
    page,
    link ?? `${served.origin}/login?code=${(await issueLoginCode(hostCtx, 'owner')).code}`,
  );
}

describe('before logging in', () => {
  it('the page tells a visitor without a session to open the login link', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(served.origin);
    await page.getByText('You are not signed in').waitFor();
    await context.close();
  });

  it('a login link opened a second time, or followed by a cross-site page, signs nobody in; Log out ends the session', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) errors.push(msg.text());
    });
    const link = `${served.origin}/login?code=${(await issueLoginCode(hostCtx, 'owner')).code}`;
    await page.goto(link);
    expect(await context.cookies()).toEqual([]);
    await signIn(page, link);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You are not signed in').waitFor();
    await page.goto(link);
    await page.getByText('That login link is not valid').waitFor();
    expect(errors).toEqual([]);
    await context.close();
  });
});

describe.each(VIEWPORTS)('the web page at a $name viewport ($width×$height)', (view) => {
  const helper = `helper-${view.name}`;
  const worker = `worker-${view.name}`;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const shot = (name: string) => screenshot(page, `${view.name}-${name}`);

  /** Goes to the list (phones show it instead of the detail pane), then follows a link in it. */
  async function openFromList(linkName: string): Promise<void> {
    if (view.isMobile) await page.goto(`${served.origin}/#/`);
    await page.getByRole('navigation').getByRole('link', { name: linkName, exact: true }).click();
  }

  beforeAll(async () => {
    context = await newViewContext(browser, view);
    page = await context.newPage();
    collectProblems(page, problems, { console: 'all' });
  });

  afterAll(async () => {
    await context?.close();
  });

  it('logs in through the printed link and lists the channels and agent queues', async () => {
    // The printed link works once: the first viewport uses it, the next a fresh `login-link`.
    await signIn(page, printedLinkUsed ? undefined : served.loginLink);
    printedLinkUsed = true;
    expect(new URL(page.url()).pathname).toBe('/');
    expect(page.url()).not.toContain('code=');
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === `sluice_session_${new URL(served.origin).port}`)).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
    });
    const nav = page.getByRole('navigation');
    await nav.getByRole('link', { name: `#team-${view.name}` }).waitFor();
    await nav.getByRole('link', { name: helper, exact: true }).waitFor();
    await expect.poll(() => page.getByRole('status').textContent(), POLL).toMatch(/live/);
    await shot('1-home');
    // Keyboard focus is visible: the first link gets the focus ring.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
    if (view.isMobile) expect(await smallTouchTargets(page)).toEqual([]);
  });

  it('sends a message with a pasted screenshot and shows the image from /media', async () => {
    await openFromList(`#team-${view.name}`);
    await page.getByText(`Welcome to team-${view.name}.`).waitFor();
    const composer = page.getByRole('textbox', { name: `Message #team-${view.name}` });
    await composer.fill(`Here is the screenshot (${view.name})`);
    // Paste an image the way a browser does for a screenshot: a ClipboardEvent carrying a File.
    const png = (await screenshotPng()).toString('base64');
    await composer.evaluate((textarea, base64) => {
      const g = globalThis as unknown as PageGlobals;
      const bytes = Uint8Array.from(g.atob(base64), (c) => c.charCodeAt(0));
      const data = new g.DataTransfer();
      data.items.add(new g.File([bytes], 'screenshot.png', { type: 'image/png' }));
      textarea.dispatchEvent(
        new g.ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }) as Event,
      );
    }, png);
    const pending = page.getByRole('list', { name: 'Attachments to send' });
    await pending.getByText('screenshot.png').waitFor();
    await expect.poll(() => pending.getByText('uploading…').count(), POLL).toBe(0);
    await shot('2-composer-with-paste');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const sent = page.locator('article.message', { hasText: `Here is the screenshot (${view.name})` });
    const image = sent.getByRole('img', { name: 'screenshot.png' });
    await image.waitFor();
    await expect
      .poll(() => image.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), POLL)
      .toBe(160);
    expect(await image.getAttribute('src')).toMatch(/^\/media\/.+/);
    await shot('3-timeline-with-image');
    // Seeing the newest message marks the channel read for the owner (presentation only).
    const channelId = decodeURIComponent(new URL(page.url()).hash.replace('#/channel/', ''));
    // Asked from inside the page (same origin, its session cookie), as the page itself would.
    const history = async () =>
      (await page.evaluate(async (id) => {
        const response = await (globalThis as unknown as InPageFetch).fetch('/rpc', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'channel.history',
            params: { channelId: id, size: 1 },
          }),
        });
        return response.json();
      }, channelId)) as {
        result: { messages: { seq: number }[]; readMarks: { principal: string; lastReadSeq: number }[] };
      };
    await expect
      .poll(async () => {
        const { result } = await history();
        return result.readMarks.find((m) => m.principal === 'owner')?.lastReadSeq === result.messages[0]?.seq;
      }, POLL)
      .toBe(true);
    // The agent's inbox has it with the attachment.
    const inbox = await listInbox(hostCtx, await resolveAgent(hostCtx, helper));
    expect(inbox.at(-1)?.projection.attachments).toEqual([
      expect.objectContaining({ name: 'screenshot.png', mime: 'image/png' }),
    ]);
  });

  it('sends a file dropped anywhere on the timeline, shown as a download link', async () => {
    const messages = page.getByRole('log');
    await messages.evaluate((el) => {
      const g = globalThis as unknown as PageGlobals;
      const data = new g.DataTransfer();
      data.items.add(new g.File(['name,count\nwidgets,3\n'], 'report – 2026.csv', { type: 'text/csv' }));
      for (const type of ['dragenter', 'dragover', 'drop']) {
        el.dispatchEvent(
          new g.DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }) as Event,
        );
      }
    });
    const pending = page.getByRole('list', { name: 'Attachments to send' });
    await pending.getByText('report – 2026.csv').waitFor();
    await expect.poll(() => pending.getByText('uploading…').count(), POLL).toBe(0);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const link = page.getByRole('link', { name: /report – 2026\.csv/ });
    await link.waitFor();
    expect(await link.getAttribute('href')).toMatch(/^\/media\/.+/);
    const downloaded = await page.evaluate(
      async (href) => {
        const response = await (globalThis as unknown as InPageFetch).fetch(href);
        return { status: response.status, text: await response.text() };
      },
      (await link.getAttribute('href'))!,
    );
    expect(downloaded).toEqual({ status: 200, text: 'name,count\nwidgets,3\n' });
  });

  it('scrolls back through a long channel page by page and expands a large message', async () => {
    const owner = await resolvePrincipal(hostCtx, 'owner');
    const big = `BIG ${'大きな本文 🙂 '.repeat(9_000)}END`;
    await sendMessage(hostCtx, owner, { to: `#long-${view.name}`, body: 'long message 0' });
    await sendMessage(hostCtx, owner, { to: `#long-${view.name}`, body: big });
    for (let i = 2; i < 130; i++)
      await sendMessage(hostCtx, owner, { to: `#long-${view.name}`, body: `long message ${i}` });
    await openFromList(`#long-${view.name}`);
    const line = (n: number) => page.locator('.body', { hasText: new RegExp(`^long message ${n}$`) });
    await line(129).waitFor();
    expect(await line(0).count()).toBe(0);
    const log = page.getByRole('log');
    for (let step = 0; step < 100 && (await line(0).count()) === 0; step++) {
      await log.evaluate((el) => {
        (el as unknown as Scrollable).scrollTop = 0;
      });
      await page.waitForTimeout(50);
    }
    await line(0).waitFor();
    await page.getByText(`Beginning of #long-${view.name}`).waitFor();
    expect(await page.locator('article.message').count()).toBe(130);
    const bigMessage = page.locator('article.message', { hasText: 'BIG ' });
    await bigMessage.getByRole('button', { name: /Show the whole message/ }).click();
    await expect
      .poll(() => bigMessage.locator('.body').evaluate((el) => el.textContent), { ...POLL, timeout: 20_000 })
      .toBe(big);
    await shot('3b-long-channel');
  });

  // Counts below follow from the tests above: the welcome, the screenshot and the dropped file.
  it('updates the queue summary and cards live when the CLI sends from another process', async () => {
    await openFromList(helper);
    const total = page.getByTestId('queue-total');
    await expect.poll(() => total.textContent(), POLL).toBe('3');
    await expect.poll(() => page.locator('.card').count(), POLL).toBe(3);
    await page.evaluate(() => {
      (globalThis as { notReloaded?: boolean }).notReloaded = true;
    });
    await cli(home, ['message', 'send', helper, '-m', `Live from the CLI (${view.name})`]);
    await expect.poll(() => total.textContent(), POLL).toBe('4');
    await page.locator('.card', { hasText: `Live from the CLI (${view.name})` }).waitFor();
    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await shot('4-queue-live');
    if (view.isMobile) expect(await smallTouchTargets(page)).toEqual([]);
  });

  it('opens a 600 KB card and shows its full text, read in parts', async () => {
    const body = `BEGIN ${view.name} ${'Долгий текст 😀 "quoted" \\ line\n'.repeat(16_000)} END`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(600_000);
    await cli(home, ['message', 'send', helper, '-m', '-'], body);
    const card = page.locator('.card', { hasText: `BEGIN ${view.name}` });
    await card.waitFor();
    await card.click();
    const dialog = page.getByRole('dialog');
    const text = dialog.getByTestId('reader-body');
    await text.waitFor({ timeout: 20_000 });
    expect(await text.evaluate((el) => el.textContent)).toBe(body);
    await expect
      .poll(() => dialog.getByTestId('reader-info').textContent(), POLL)
      .toMatch(/read in [2-9] parts/);
    await shot('5-large-card');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'hidden' });
  });

  it('shows a banner for a blocking returned card, and Resume clears it', async () => {
    await cli(home, ['message', 'send', worker, '-m', `Please summarise the report (${view.name})`]);
    await failTurnOver(hostCtx, worker);
    await openFromList(worker);
    const banner = page.getByTestId('blocking-banner');
    await banner.waitFor();
    await expect.poll(() => page.locator('.card.state-returned').count(), POLL).toBe(1);
    await shot('6-blocking-banner');
    if (view.isMobile) expect(await smallTouchTargets(page)).toEqual([]);
    await banner.getByRole('button', { name: 'Resume', exact: true }).click();
    await banner.waitFor({ state: 'hidden' });
    await expect.poll(() => page.locator('.card.state-returned').count(), POLL).toBe(0);
    const summary = await queueSummary(hostCtx.store.db, await resolveAgent(hostCtx, worker));
    expect(summary.blockingReturnedMessageId).toBeNull();
    await shot('7-resumed');
  });

  it('edits and withdraws a card and pauses the queue from the page', async () => {
    const id = await cli(home, ['message', 'send', helper, '-m', `Edit me (${view.name})`]);
    await openFromList(helper);
    const total = page.getByTestId('queue-total');
    await expect.poll(() => total.textContent(), POLL).toBe('6');
    await page.locator('.card', { hasText: `Edit me (${view.name})` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Edit' }).click();
    await dialog.getByRole('textbox', { name: 'Edit the message text' }).fill(`Edited ✎ (${view.name})`);
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect
      .poll(() => dialog.getByTestId('reader-body').textContent(), POLL)
      .toBe(`Edited ✎ (${view.name})`);
    const stored = await readProjection(hostCtx, await resolvePrincipal(hostCtx, 'owner'), id);
    expect(stored.body).toBe(`Edited ✎ (${view.name})`);
    await dialog.getByRole('button', { name: 'Withdraw' }).click();
    await shot('8-withdraw-confirm');
    await dialog.getByRole('button', { name: 'Yes, withdraw' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await expect.poll(() => total.textContent(), POLL).toBe('5');
    await expect.poll(() => page.locator('.card', { hasText: 'Edited ✎' }).count(), POLL).toBe(0);
    await page.getByRole('button', { name: 'Pause queue' }).click();
    await page.getByRole('button', { name: 'Resume queue' }).waitFor();
    const helperAgent = await resolveAgent(hostCtx, helper);
    expect(await queueSummary(hostCtx.store.db, helperAgent)).toMatchObject({ paused: true });
    await page.getByRole('button', { name: 'Resume queue' }).click();
    await page.getByRole('button', { name: 'Pause queue' }).waitFor();
    expect(await queueSummary(hostCtx.store.db, helperAgent)).toMatchObject({ paused: false });
  });

  it('pages through a 300-card queue both ways while only the visible cards are in the page', async () => {
    const bulk = `bulk-${view.name}`;
    const owner = await resolvePrincipal(hostCtx, 'owner');
    for (let i = 0; i < 300; i++) await sendMessage(hostCtx, owner, { to: bulk, body: `bulk card ${i}` });
    await openFromList(bulk);
    await expect.poll(() => page.getByTestId('queue-total').textContent(), POLL).toBe('300');
    const list = page.locator('.card-list');
    const card = (n: number) => page.locator('.card-preview', { hasText: new RegExp(`^bulk card ${n}$`) });
    await card(0).waitFor();
    const mostCardsInPage = { value: 0 };
    const scrollUntil = async (n: number, to: 'end' | 'start') => {
      for (let step = 0; step < 200 && (await card(n).count()) === 0; step++) {
        await list.evaluate((el, where) => {
          const box = el as unknown as Scrollable;
          box.scrollTop =
            where === 'end' ? box.scrollTop + box.clientHeight : box.scrollTop - box.clientHeight;
        }, to);
        await page.waitForTimeout(30);
        mostCardsInPage.value = Math.max(mostCardsInPage.value, await page.locator('.card').count());
      }
      await card(n).waitFor();
    };
    await scrollUntil(299, 'end');
    await shot('9-long-queue-end');
    await scrollUntil(0, 'start');
    expect(mostCardsInPage.value).toBeGreaterThan(3);
    expect(mostCardsInPage.value).toBeLessThan(40);
    // The owner also sees the agent's run and Connect panels above the cards (a quarter of the
    // queue's height at most), so the walk takes more screens: 90 s on a loaded 2-core machine.
  }, 90_000);

  it('logged no errors in the page', () => {
    expect(problems).toEqual([]);
  });
});

describe('when a page of cards goes stale', () => {
  it('re-reads around the card in view and keeps paging to the end', async () => {
    await cli(home, ['agent', 'add', 'drift']);
    await cli(home, ['channel', 'create', 'drift', '--members', 'drift']);
    const owner = await resolvePrincipal(hostCtx, 'owner');
    for (let i = 0; i < 150; i++) await sendMessage(hostCtx, owner, { to: 'drift', body: `drift card ${i}` });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    // Between the page and the real host: answer the first cursor read with `stale`, as the host
    // does when the queue changed under the cursor, and note every queue.page the page asks for.
    const asked: Record<string, unknown>[] = [];
    let staleSent = false;
    await page.routeWebSocket(/\/rpc$/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((text) => {
        const frame = JSON.parse(String(text)) as {
          id: number;
          method: string;
          params: Record<string, unknown>;
        };
        if (frame.method === 'queue.page') asked.push(frame.params);
        if (frame.method === 'queue.page' && frame.params.cursor && !staleSent) {
          staleSent = true;
          const result = { status: 'stale', generation: 'other', revision: 0, reason: 'anchor-moved' };
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: frame.id, result }));
          return;
        }
        server.send(text);
      });
    });
    await signIn(page);
    await page.getByRole('navigation').getByRole('link', { name: 'drift', exact: true }).click();
    const card = (n: number) => page.locator('.card-preview', { hasText: new RegExp(`^drift card ${n}$`) });
    await card(0).waitFor();
    const list = page.locator('.card-list');
    for (let step = 0; step < 200 && (await card(149).count()) === 0; step++) {
      await list.evaluate((el) => {
        const box = el as unknown as Scrollable;
        box.scrollTop += box.clientHeight;
      });
      await page.waitForTimeout(30);
    }
    await card(149).waitFor();
    expect(staleSent).toBe(true);
    const staleAt = asked.findIndex((params) => params.cursor !== undefined);
    expect(asked[staleAt + 1]).toMatchObject({ agent: 'drift', around: expect.any(String) });
    await screenshot(page, 'desktop-10-after-stale');
    await context.close();
  });
});

describe('when the host restarts', () => {
  it('the page reconnects on its own and live updates resume', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await signIn(page);
    await page.getByRole('navigation').getByRole('link', { name: 'helper-desktop', exact: true }).click();
    const total = page.getByTestId('queue-total');
    await expect.poll(() => total.textContent(), POLL).toBe('5');
    const status = page.getByRole('status');
    await expect.poll(() => status.textContent(), POLL).toMatch(/live/);
    const port = Number(new URL(served.origin).port);
    await stopServe(served);
    await expect.poll(() => status.textContent(), POLL).toMatch(/reconnecting/);
    served = await startServe(home, port);
    await expect.poll(() => status.textContent(), { ...POLL, timeout: 30_000 }).toMatch(/live/);
    await cli(home, ['message', 'send', 'helper-desktop', '-m', 'After the restart']);
    await expect.poll(() => total.textContent(), POLL).toBe('6');
    await page.locator('.card', { hasText: 'After the restart' }).waitFor();
    await context.close();
  });
});
