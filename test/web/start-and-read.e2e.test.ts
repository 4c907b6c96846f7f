// The page as a place to start things and read them: "New message", "New channel" and "Leave"
// (DESIGN §8 labels), Markdown rendered safely, long bodies collapsed, relative times, and clear
// empty / denied states. Debian's Chromium via playwright-core against a real `sluice serve`.
// Screenshots land in test-artifacts/web/<viewport>-<step>.png next to browser.e2e.test.ts's (with
// SLUICE_SCREENSHOTS=1); each screen is also scanned by axe-core (no serious or critical violation;
// CSP is bypassed in these contexts only so its source can be injected), a later state of a screen
// already scanned only where it changed.

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel, listAllChannels } from '../../src/host/channels/channels.js';
import { resolveAgent, resolvePrincipal } from '../../src/host/identity/principals.js';
import { issueLoginCode } from '../../src/host/identity/sessions.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { listInbox } from '../../src/host/queue/inbox.js';
import { queueSummary } from '../../src/host/queue/queue.js';
import { seriousViolations } from './axe-scan.js';
import {
  collectProblems,
  failTurnOver,
  loginLinkFor,
  newViewContext,
  POLL,
  screenshot,
  seedAs,
  signIn,
  useStage,
  VIEWPORTS,
} from './browser-support.js';

const stage = useStage('sluice-web-start-', async (_home, ctx) => {
  for (const view of VIEWPORTS) {
    // An agent nobody has written to yet, and a person: only "New message" reaches them.
    await seedAs.agent(ctx, `solo-${view.name}`);
    await seedAs.person(ctx, `pat-${view.name}`);
    await seedAs.agent(ctx, `hidden-${view.name}`);
    await seedAs.person(ctx, `guest-${view.name}`);
    await seedAs.agent(ctx, `turner-${view.name}`, 'turn');
  }
});

function loginLink(): Promise<string> {
  return loginLinkFor(stage);
}

describe('before the owner has any channel', () => {
  it.each(VIEWPORTS)('the $name list says how to start one, not which CLI command to run', async (view) => {
    const context = await newViewContext(stage.browser, view, { bypassCSP: true });
    const page = await context.newPage();
    await signIn(page, await loginLink());
    await page.getByRole('navigation').getByText('No channels yet. Press New channel').waitFor();
    await screenshot(page, `${view.name}-11-no-channels`);
    expect(await seriousViolations(page, '11-no-channels')).toEqual([]);
    await context.close();
  });
});

describe.each(VIEWPORTS)('starting things from the page at a $name viewport ($width×$height)', (view) => {
  const solo = `solo-${view.name}`;
  const pat = `pat-${view.name}`;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  /** A screenshot (SLUICE_SCREENSHOTS=1) and axe: the whole page, or `within` (a selector). */
  const shot = async (name: string, within?: string) => {
    await screenshot(page, `${view.name}-${name}`);
    expect(await seriousViolations(page, name, within)).toEqual([]);
  };
  const nav = () => page.getByRole('navigation');
  /** Phones show the list only on the home screen. */
  const toList = async () => {
    if (view.isMobile) await page.goto(`${stage.served.origin}/#/`);
  };

  beforeAll(async () => {
    context = await newViewContext(stage.browser, view, { bypassCSP: true });
    page = await context.newPage();
    collectProblems(page, problems, { console: 'all' });
    await signIn(page, await loginLink());
  });

  afterAll(async () => {
    await context?.close();
  });

  it('"New message" starts a DM with an agent nobody has written to, and opens it', async () => {
    await toList();
    await page.getByRole('button', { name: 'New message', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'New message' });
    const to = dialog.getByRole('combobox', { name: 'To' });
    await expect.poll(() => to.locator('option').count(), POLL).toBeGreaterThan(2);
    await to.selectOption(solo);
    await dialog.getByRole('textbox', { name: 'Message' }).fill(`First words for ${solo}`);
    await shot('12-new-message');
    await dialog.getByRole('button', { name: 'Send', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.locator('article.message', { hasText: `First words for ${solo}` }).waitFor();
    await page.getByRole('heading', { name: `@${solo}` }).waitFor();
    await shot('13-new-dm', 'main.pane');
    const inbox = await listInbox(stage.hostCtx, await resolveAgent(stage.hostCtx, solo));
    expect(inbox.map((entry) => entry.projection.body)).toEqual([`First words for ${solo}`]);
    // The agent is now in the list of queues too.
    await toList();
    await nav()
      .getByRole('link', { name: `@${solo}`, exact: true })
      .waitFor();
    await nav().getByRole('link', { name: solo, exact: true }).waitFor();
  });

  it('"New channel" creates a channel with the chosen members and opens it', async () => {
    await toList();
    await page.getByRole('button', { name: 'New channel', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'New channel' });
    await dialog.getByRole('textbox', { name: 'Channel name' }).fill(`made-${view.name}`);
    await dialog.getByRole('checkbox', { name: solo }).check();
    await dialog.getByRole('checkbox', { name: pat }).check();
    await shot('14-new-channel', 'dialog');
    await dialog.getByRole('button', { name: 'Create channel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('heading', { name: `#made-${view.name}` }).waitFor();
    await page.getByText('No messages yet.').waitFor();
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    const made = (await listAllChannels(stage.hostCtx, owner)).find((c) => c.name === `made-${view.name}`);
    expect(made?.members.map((m) => m.name).sort()).toEqual(['owner', pat, solo].sort());
  });

  it('"New channel" with a name already taken says so in one line and keeps the form', async () => {
    await toList();
    await page.getByRole('button', { name: 'New channel', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'New channel' });
    await dialog.getByRole('textbox', { name: 'Channel name' }).fill(`made-${view.name}`);
    await dialog.getByRole('button', { name: 'Create channel' }).click();
    await dialog
      .getByRole('alert')
      .getByText(/already exists/)
      .waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
  });

  it('"Leave" asks once, then leaves the channel and drops it from the list', async () => {
    await toList();
    await nav()
      .getByRole('link', { name: `#made-${view.name}`, exact: true })
      .click();
    await page.getByRole('button', { name: 'Leave', exact: true }).click();
    await page.getByRole('group', { name: `Leave #made-${view.name}?` }).waitFor();
    await shot('15-leave-confirm', 'main.pane');
    await page.getByRole('button', { name: 'Yes, leave' }).click();
    await page.waitForURL((u) => u.hash === '#/' || u.hash === '');
    await toList();
    await nav()
      .getByRole('link', { name: `@${solo}`, exact: true })
      .waitFor();
    expect(
      await nav()
        .getByRole('link', { name: `#made-${view.name}`, exact: true })
        .count(),
    ).toBe(0);
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    expect((await listAllChannels(stage.hostCtx, owner)).map((c) => c.name)).not.toContain(
      `made-${view.name}`,
    );
  });

  it('logged no errors in the page', () => {
    expect(problems).toEqual([]);
  });
});

/** What a hostile body tried to do in the page, if anything ran. */
interface Pwned {
  pwned?: unknown;
}

describe.each(VIEWPORTS)('reading comfortably at a $name viewport ($width×$height)', (view) => {
  const channel = `read-${view.name}`;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  /** A screenshot (SLUICE_SCREENSHOTS=1) and axe: the whole page, or `within` (a selector). */
  const shot = async (name: string, within?: string) => {
    await screenshot(page, `${view.name}-${name}`);
    expect(await seriousViolations(page, name, within)).toEqual([]);
  };
  const message = (text: string | RegExp) => page.locator('article.message', { hasText: text });

  beforeAll(async () => {
    // Through the host API: the built CLI may be mid-rebuild by someone else's work.
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    await createChannel(stage.hostCtx, owner, { name: channel, members: [`solo-${view.name}`] });
    context = await newViewContext(stage.browser, view, { bypassCSP: true });
    page = await context.newPage();
    collectProblems(page, problems, { console: 'all' });
    page.on('dialog', (dialog) => {
      problems.push(`a script opened a ${dialog.type()}`);
      void dialog.dismiss();
    });
    await signIn(page, await loginLink());
  });

  afterAll(async () => {
    await context?.close();
  });

  async function send(body: string): Promise<void> {
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    await sendMessage(stage.hostCtx, owner, { to: `#${channel}`, body });
  }

  async function open(): Promise<void> {
    if (view.isMobile) await page.goto(`${stage.served.origin}/#/`);
    await page
      .getByRole('navigation')
      .getByRole('link', { name: `#${channel}`, exact: true })
      .click();
  }

  it('renders Markdown: emphasis, links that open safely in a new tab, and code blocks', async () => {
    await send(
      [
        '**Summary** of the _run_:',
        '',
        '- see https://example.com/docs',
        '- and [the guide](https://example.org/guide)',
        '',
        '```ts',
        'const answer = 42;',
        '```',
        '',
        'Inline `npm test` too.',
      ].join('\n'),
    );
    await open();
    const rendered = message('Summary');
    await rendered.locator('strong', { hasText: 'Summary' }).waitFor();
    expect(await rendered.locator('em').textContent()).toBe('run');
    expect(await rendered.textContent()).not.toContain('**');
    const bare = rendered.getByRole('link', { name: 'https://example.com/docs' });
    const named = rendered.getByRole('link', { name: 'the guide' });
    for (const link of [bare, named]) {
      expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
      expect(await link.getAttribute('target')).toBe('_blank');
    }
    expect(await named.getAttribute('href')).toBe('https://example.org/guide');
    expect(await rendered.locator('pre code').textContent()).toBe('const answer = 42;\n');
    expect(await rendered.locator('p code').textContent()).toBe('npm test');
    await shot('16-markdown');
  });

  it('never runs or injects raw HTML, scripts or javascript: links from a body', async () => {
    const hostile = [
      'Look <img src=x onerror="globalThis.pwned=1;alert(1)"> here',
      '<script>globalThis.pwned=2</script>',
      '[click me](javascript:globalThis.pwned=3)',
      '<a href="javascript:alert(4)" onclick="globalThis.pwned=4">raw link</a>',
      '![pixel](https://tracker.example/p.png)',
      '<svg onload="globalThis.pwned=5"></svg><iframe src="https://example.com"></iframe>',
    ].join('\n\n');
    await send(hostile);
    const shown = message('Look');
    await shown.waitFor();
    // The raw HTML is shown as text, exactly as written.
    expect(await shown.locator('.body').textContent()).toContain(
      '<img src=x onerror="globalThis.pwned=1;alert(1)">',
    );
    expect(await shown.locator('.body').textContent()).toContain('<script>globalThis.pwned=2</script>');
    for (const tag of ['img', 'script', 'svg', 'iframe'])
      expect(await shown.locator(`.body ${tag}`).count(), `${tag} in the body`).toBe(0);
    const hrefs = await shown
      .locator('.body a')
      .evaluateAll((links) => links.map((a) => a.getAttribute('href')));
    expect(hrefs.filter((href) => !href?.startsWith('https://'))).toEqual([]);
    const onAttributes = await shown
      .locator('.body *')
      .evaluateAll((els) =>
        els.flatMap((el) => el.getAttributeNames().filter((n: string) => n.startsWith('on'))),
      );
    expect(onAttributes).toEqual([]);
    expect(await page.evaluate(() => (globalThis as Pwned).pwned)).toBeUndefined();
  });

  it('collapses a body over about forty lines behind "Show more" with its size, and expands it', async () => {
    const lines = Array.from({ length: 60 }, (_, i) => `line ${i + 1} of the build log`);
    await send(lines.join('\n'));
    const long = message('line 1 of the build log');
    await long.waitFor();
    const more = long.getByRole('button', { name: /^Show more \(60 lines, [\d.]+ (B|KB)\)$/ });
    await more.waitFor();
    const body = long.locator('.body');
    const clipped = () =>
      body.evaluate((el) => (el as unknown as { scrollHeight: number; clientHeight: number }).clientHeight);
    const full = await body.evaluate((el) => (el as unknown as { scrollHeight: number }).scrollHeight);
    expect(await clipped()).toBeLessThan(full);
    await shot(
      '17-show-more',
      `article.message[data-message-id="${await long.getAttribute('data-message-id')}"]`,
    );
    await more.click();
    await long.getByRole('button', { name: 'Show less' }).waitFor();
    await expect.poll(clipped, POLL).toBe(full);
    // A short body has no such button.
    expect(
      await message('Summary')
        .getByRole('button', { name: /Show more/ })
        .count(),
    ).toBe(0);
  });

  it('shows relative times with the exact time on hover', async () => {
    const time = message('Summary').locator('header time');
    expect(await time.textContent()).toMatch(/just now|minute/);
    const exact = await time.getAttribute('title');
    expect(exact).toContain(String(new Date().getFullYear()));
    expect(exact).toMatch(/\d{1,2}:\d{2}:\d{2}/);
  });

  it('logged no errors in the page', () => {
    expect(problems).toEqual([]);
  });
});

describe('states a person can reach', () => {
  it.each(VIEWPORTS)(
    'at $name, a queue the person may not read says why and offers to write to the agent, never a stuck "Loading…"',
    async (view) => {
      const agent = `hidden-${view.name}`;
      const context = await newViewContext(stage.browser, view, { bypassCSP: true });
      const page = await context.newPage();
      const problems: string[] = [];
      collectProblems(page, problems);
      const code = (await issueLoginCode(stage.hostCtx, `guest-${view.name}`)).code;
      await signIn(page, `${stage.served.origin}/login?code=${code}`, `guest-${view.name}`);
      await page.goto(`${stage.served.origin}/#/queue/${agent}`);
      const pane = page.locator('main.pane');
      await pane.getByRole('alert').getByText(`You can't see ${agent}'s queue`).waitFor();
      expect(await pane.getByText(/Loading|Reading/).count()).toBe(0);
      expect(await pane.getByRole('alert').count()).toBe(1);
      await screenshot(page, `${view.name}-18-queue-denied`);
      expect(await seriousViolations(page, '18-queue-denied', 'main.pane')).toEqual([]);
      // The next step works: write to the agent, and its queue is then the person's to watch.
      await pane.getByRole('button', { name: `Message ${agent}` }).click();
      const dialog = page.getByRole('dialog', { name: 'New message' });
      await expect.poll(() => dialog.getByRole('combobox', { name: 'To' }).inputValue(), POLL).toBe(agent);
      await dialog.getByRole('textbox', { name: 'Message' }).fill('Hello from a guest');
      await dialog.getByRole('button', { name: 'Send', exact: true }).click();
      await page.locator('article.message', { hasText: 'Hello from a guest' }).waitFor();
      await page.goto(`${stage.served.origin}/#/queue/${agent}`);
      await expect.poll(() => page.getByTestId('queue-total').textContent(), POLL).toBe('1');
      expect(problems).toEqual([]);
      await context.close();
    },
  );

  it('a queue of an agent that does not exist says so and links back to the list', async () => {
    const context = await stage.browser.newContext({
      viewport: { width: 1280, height: 800 },
      bypassCSP: true,
    });
    const page = await context.newPage();
    await signIn(page, await loginLink());
    await page.goto(`${stage.served.origin}/#/queue/nobody-here`);
    await page.getByRole('alert').getByText('There is no agent called nobody-here').waitFor();
    await page.getByRole('link', { name: 'Back to the list' }).waitFor();
    await context.close();
  });
});

describe.each(VIEWPORTS)('the queue panel at a $name viewport ($width×$height)', (view) => {
  const agent = `turner-${view.name}`;
  const channel = `jobs-${view.name}`;

  it('cards show their channel and time, and "Resume all" resumes every returned card at once', {
    timeout: 120_000,
  }, async () => {
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    await createChannel(stage.hostCtx, owner, { name: channel, members: [agent] });
    for (let i = 1; i <= 3; i++)
      await sendMessage(stage.hostCtx, owner, { to: `#${channel}`, body: `job ${i}` });
    // A failed turn that had read all three: they come back as returned cards.
    await failTurnOver(stage.hostCtx, agent);
    const turner = await resolveAgent(stage.hostCtx, agent);
    expect((await queueSummary(stage.hostCtx.store.db, turner)).blockingReturnedMessageId).not.toBeNull();

    const context = await newViewContext(stage.browser, view, { bypassCSP: true });
    const page = await context.newPage();
    const problems: string[] = [];
    collectProblems(page, problems);
    await signIn(page, await loginLink());
    await page.goto(`${stage.served.origin}/#/queue/${agent}`);
    // Generous: on a loaded machine (a CI run: 26 s) the summary and the first page of cards take a while.
    // On failure, say what the page showed instead (a CI run once saw no cards after 60 s).
    await expect
      .poll(() => page.locator('.card.state-returned').count(), { ...POLL, timeout: 60_000 })
      .toBe(3)
      .catch(async (err: Error) => {
        throw new Error(
          `${err.message}; the page showed: ${(await page.locator('body').textContent())?.slice(0, 2000)}`,
        );
      });
    const card = page.locator('.card', { hasText: 'job 1' });
    expect(await card.locator('.card-channel').textContent()).toBe(`in #${channel}`);
    expect(await card.locator('time').textContent()).toMatch(/just now|minute/);
    expect(await card.locator('time').getAttribute('title')).toMatch(/\d{1,2}:\d{2}:\d{2}/);
    const banner = page.getByTestId('blocking-banner');
    await banner.waitFor();
    await screenshot(page, `${view.name}-19-returned-cards`);
    expect(await seriousViolations(page, '19-returned-cards')).toEqual([]);
    await banner.getByRole('button', { name: 'Resume all' }).click();
    await banner.waitFor({ state: 'hidden' });
    await expect.poll(() => page.locator('.card.state-returned').count(), POLL).toBe(0);
    await expect
      .poll(() => page.getByTestId('resumed-count').textContent(), POLL)
      .toBe('Resumed 3 returned messages.');
    expect((await queueSummary(stage.hostCtx.store.db, turner)).blockingReturnedMessageId).toBeNull();
    await screenshot(page, `${view.name}-20-resumed-all`);
    expect(await seriousViolations(page, '20-resumed-all', 'main.pane')).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
