// A newcomer's walkthrough of the page, in Debian's Chromium against a real `sluice serve`, at both
// sizes: every button holds its label (the sidebar's "New message" ran over its border at 1280 px),
// a queue card keeps its author's name whole on a phone (it was cut to "ow…"), the signed-out card
// keeps the page's margins on a phone, a page load logs no console error (a 404 for /favicon.ico)
// and "New agent…" looks like a button and says when the agent was added. Screenshots in
// test-artifacts/web/ (`<viewport>-5x-…`, with SLUICE_SCREENSHOTS=1). axe-core scans what is new
// here: the queue card and the dialog after an agent was added (the signed-out screen and the
// queue and New message screens as a whole are scanned in members-and-queue and start-and-read).

import type { BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { findPrincipalByName } from '../../src/store/ops/principals.js';
import { seriousViolations } from './axe-scan.js';
import {
  collectProblems,
  loginLinkFor,
  newViewContext,
  POLL,
  screenshot,
  seedAs,
  signIn,
  useStage,
  VIEWPORTS,
  type View,
} from './browser-support.js';

const stage = useStage('sluice-web-polish-', async (_home, ctx) => {
  await seedAs.agent(ctx, 'helper');
  await seedAs.channel(ctx, 'deskchannel', ['owner', 'helper']);
  await seedAs.message(ctx, '#deskchannel', 'Please tidy the desk before Monday.');
});

/** The page's own margin on a phone (`1rem`). */
const PAGE_MARGIN = 16;

/**
 * Signed out, the page's `host.hello` POST is answered 401 (how it learns to show the notice), and
 * Chromium logs every 4xx response as a console error; that one is expected, nothing else is.
 */
function unexpected(problems: string[]): string[] {
  return problems.filter(
    (p) => !/^(HTTP 401 for|console: Failed to load resource: .* 401 .*at) \S+\/rpc$/.test(p),
  );
}

async function openContext(view: View): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  // CSP is bypassed only so axe-core's source can be injected; the favicon test checks the CSP.
  const context = await newViewContext(stage.browser, view, { bypassCSP: true });
  const page = await context.newPage();
  const problems: string[] = [];
  collectProblems(page, problems, { console: 'all', http: true });
  return { context, page, problems };
}

/**
 * The visible buttons under `scope` whose text runs outside the inside of their border: the text's
 * Range box against the button's client box (border box minus borders), and scrollWidth against
 * clientWidth. One line per offender, with the measurements.
 */
async function buttonsOverflowing(page: Page, scope: string): Promise<string[]> {
  // Page-side code is passed as text: the root tsconfig has no DOM types.
  return (await page.evaluate(`(() => {
    const out = [];
    for (const button of document.querySelectorAll(${JSON.stringify(`${scope} button`)})) {
      if (button.getClientRects().length === 0) continue;
      const box = button.getBoundingClientRect();
      const left = box.left + button.clientLeft;
      const right = left + button.clientWidth;
      const range = document.createRange();
      range.selectNodeContents(button);
      const text = range.getBoundingClientRect();
      const label = (button.textContent || '').trim();
      if (text.left < left - 0.5 || text.right > right + 0.5 || button.scrollWidth > button.clientWidth)
        out.push('"' + label + '": text ' + text.left.toFixed(1) + '-' + text.right.toFixed(1) +
          ' px, inside the border ' + left.toFixed(1) + '-' + right.toFixed(1) + ' px, scrollWidth ' +
          button.scrollWidth + ' > clientWidth ' + button.clientWidth);
    }
    return out;
  })()`)) as string[];
}

describe.each(VIEWPORTS)('the walkthrough at $name ($width×$height)', (view) => {
  const shot = (page: Page, name: string) => screenshot(page, `${view.name}-${name}`);
  const violations: string[] = [];
  const scan = async (page: Page, screen: string, within: string) =>
    violations.push(...(await seriousViolations(page, `${view.name} ${screen}`, within)));

  it('loads the signed-out, sign-in and home pages with no console error and serves an icon', {
    timeout: 60_000,
  }, async () => {
    const { context, page, problems } = await openContext(view);
    await page.goto(`${stage.served.origin}/`);
    await page.getByText('You are not signed in').waitFor();
    expect(unexpected(problems.splice(0))).toEqual([]);
    await page.goto(await loginLinkFor(stage));
    await page.getByRole('button', { name: 'Sign in as owner' }).waitFor();
    expect(problems).toEqual([]);
    await page.getByRole('button', { name: 'Sign in as owner' }).click();
    await page.waitForURL((u) => u.pathname === '/' && !u.search.includes('code='));
    await page.getByRole('link', { name: '#deskchannel' }).waitFor();
    // The page names its icon, and the address a browser asks for without one (the sign-in page,
    // which the host renders) is there too: each an image, under the page's security headers.
    const href = (await page.evaluate(
      `document.querySelector('link[rel~="icon"]')?.getAttribute('href') ?? ''`,
    )) as string;
    expect(href).not.toBe('');
    for (const path of [href, '/favicon.ico']) {
      const response = await context.request.get(new URL(path, stage.served.origin).href);
      expect(response.status(), path).toBe(200);
      expect(response.headers()['content-type'], path).toMatch(/^image\//);
      expect(response.headers()['x-content-type-options'], path).toBe('nosniff');
      expect((await response.body()).length, path).toBeGreaterThan(100);
    }
    expect(problems).toEqual([]);
    await context.close();
  });

  it('keeps the page margins around the signed-out card', { timeout: 60_000 }, async () => {
    const { context, page, problems } = await openContext(view);
    await page.goto(`${stage.served.origin}/`);
    const card = page.locator('main.notice');
    await card.getByText('You are not signed in').waitFor();
    const box = await card.boundingBox();
    expect(box).not.toBeNull();
    if (!box) return;
    expect(box.x).toBeGreaterThanOrEqual(PAGE_MARGIN);
    expect(view.width - (box.x + box.width)).toBeGreaterThanOrEqual(PAGE_MARGIN);
    await shot(page, '50-signed-out');
    expect(unexpected(problems)).toEqual([]);
    await context.close();
    expect(violations).toEqual([]);
  });

  it('fits every button label inside its button, in the sidebar and the start dialogs', {
    timeout: 60_000,
  }, async () => {
    const { context, page, problems } = await openContext(view);
    await signIn(page, await loginLinkFor(stage));
    await page.getByRole('link', { name: '#deskchannel' }).waitFor();
    const sidebarButtons = page.locator('nav.sidebar button');
    expect(await sidebarButtons.count()).toBeGreaterThanOrEqual(2);
    expect(await buttonsOverflowing(page, 'nav.sidebar')).toEqual([]);
    expect(await buttonsOverflowing(page, 'header.topbar')).toEqual([]);
    await shot(page, '51-home');

    await page.getByRole('button', { name: 'New message' }).click();
    const dialog = page.getByRole('dialog', { name: 'New message' });
    await dialog.getByLabel('To').waitFor();
    await dialog.getByRole('button', { name: 'New agent…' }).click();
    await dialog.getByLabel('Agent name').waitFor();
    expect(await buttonsOverflowing(page, 'dialog')).toEqual([]);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'New channel' }).click();
    const channelDialog = page.getByRole('dialog', { name: 'New channel' });
    await channelDialog.getByLabel('Channel name').waitFor();
    expect(await buttonsOverflowing(page, 'dialog')).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("keeps a queue card's author readable while the meta line gives way", { timeout: 60_000 }, async () => {
    const { context, page, problems } = await openContext(view);
    await signIn(page, await loginLinkFor(stage));
    await page.goto(`${stage.served.origin}/#/queue/helper`);
    const card = page.locator('.card').first();
    await card.waitFor();
    const sender = card.locator('.card-sender');
    expect((await sender.textContent())?.trim()).toBe('owner');
    const measured = (await page.evaluate(`(() => {
      const card = document.querySelector('.card');
      const sender = card.querySelector('.card-sender');
      const inner = card.getBoundingClientRect();
      const outside = [...card.querySelectorAll('.card-meta *')]
        .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && (r.left < inner.left - 0.5 || r.right > inner.right + 0.5); })
        .map((el) => el.className);
      return { scroll: sender.scrollWidth, client: sender.clientWidth, outside };
    })()`)) as { scroll: number; client: number; outside: string[] };
    expect(measured.scroll, 'the author is shown whole').toBeLessThanOrEqual(measured.client);
    // Nothing of the meta line leaves the card.
    expect(measured.outside).toEqual([]);
    await card.getByText('in #deskchannel', { exact: false }).waitFor();
    await scan(page, 'queue', '.card');
    await shot(page, '52-queue-card');
    expect(problems).toEqual([]);
    await context.close();
    expect(violations).toEqual([]);
  });

  it('shows "New agent…" as a button like the others and says when the agent was added', {
    timeout: 60_000,
  }, async () => {
    const agent = `scribe-${view.name}`;
    const { context, page, problems } = await openContext(view);
    await signIn(page, await loginLinkFor(stage));
    await page.getByRole('button', { name: 'New message' }).click();
    const dialog = page.getByRole('dialog', { name: 'New message' });
    await dialog.getByLabel('To').waitFor();
    const toggle = dialog.getByRole('button', { name: 'New agent…' });
    // A secondary button: the same border, background and colour as the sidebar's "New channel".
    const look = (selector: string) =>
      page.evaluate(`(() => {
        const s = getComputedStyle(document.querySelector(${JSON.stringify(selector)}));
        return [s.borderTopStyle, s.borderTopWidth, s.borderTopColor, s.backgroundColor, s.color, s.borderRadius].join(' ');
      })()`) as Promise<string>;
    const reference = await look('nav.sidebar .start-buttons button:last-child');
    expect(reference).toMatch(/^solid 1px /);
    expect(await look('dialog .new-agent-toggle')).toBe(reference);
    expect(await toggle.textContent()).toBe('New agent…');
    await shot(page, '53-new-message');

    await toggle.click();
    await dialog.getByLabel('Agent name').fill(agent);
    await dialog.getByRole('button', { name: 'Add agent' }).click();
    const status = dialog.getByRole('status');
    await expect.poll(() => status.textContent(), POLL).toContain(`Added agent ${agent}`);
    await expect.poll(() => dialog.getByLabel('To').inputValue(), POLL).toBe(agent);
    expect(await findPrincipalByName(stage.hostCtx.store.db, agent)).toMatchObject({ kind: 'agent' });
    // Focus stays in the dialog, on a control, not on the page behind it.
    expect(await page.evaluate("document.activeElement?.closest('dialog') !== null")).toBe(true);
    await scan(page, 'new-agent-added', 'dialog');
    await shot(page, '54-new-agent-added');
    expect(problems).toEqual([]);
    await context.close();
    expect(violations).toEqual([]);
  });
});
