// Issue 23 items 3, 4 and 9, in Debian's Chromium against a real `sluice serve`, at both sizes:
// - the owner sees the agents they made in the sidebar (one added from the CLI too) and opens their
//   queues without sharing a channel; a person sees the agent they manage; no empty state is false
//   (the sidebar said "No agents yet" right after an agent was added, and an agent added from the
//   CLI never appeared, its queue refused to the owner); one added from the CLI appears live;
// - a DM holding several images opens at its newest message, and a sent image is fully visible
//   (the scroll was set before the thumbnails loaded: the newest answer ended up below the fold).
//   `/media/<id>` replies are held until the timeline has rendered, as a slow network would;
// - the sign-in and "link not valid" pages wear the page's stylesheet (they were unstyled HTML).
// axe-core scans each new screen. Screenshots (SLUICE_SCREENSHOTS=1): `<viewport>-6x-…`.

import type { BrowserContext, Page } from 'playwright-core';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { addPrincipal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { seriousViolations } from './axe-scan.js';
import {
  cli,
  collectProblems,
  loginLinkFor,
  newViewContext,
  POLL,
  screenshot,
  seedAs,
  signIn,
  useStage,
  VIEWPORTS,
} from './browser-support.js';

const IMAGE_COUNT = 6;
const NEWEST = 'All six are above: this is the newest answer.';

/** A 400×300 PNG of one colour (shown at most 320×240: six are far taller than either screen). */
function picture(index: number): Promise<Buffer> {
  const shade = 40 + index * 30;
  return sharp({ create: { width: 400, height: 300, channels: 3, background: { r: shade, g: 90, b: 200 } } })
    .png()
    .toBuffer();
}

const stage = useStage('sluice-web-owner-', async (_home, ctx) => {
  // Added by the owner (as `sluice agent add` does): the owner shares no channel with it.
  await seedAs.agent(ctx, 'helper');
  const alice = await seedAs.person(ctx, 'alice');
  // A card in a conversation the owner is not in: counted, never shown to the owner.
  await sendMessage(ctx, alice, { to: 'helper', body: 'alice only, in her DM' });
  const meg = await seedAs.person(ctx, 'meg');
  await addPrincipal(ctx, { name: 'megbot', kind: 'agent', managerId: meg.id });
  await seedAs.person(ctx, 'nina');
  const painter = await seedAs.agent(ctx, 'painter');
  const owner = await resolvePrincipal(ctx, 'owner');
  await sendMessage(ctx, owner, { to: 'painter', body: 'Draw me six pictures, one per message.' });
  for (let i = 0; i < IMAGE_COUNT; i++) {
    const file = await putMedia(ctx, painter, await picture(i), `picture-${i + 1}.png`);
    await sendMessage(ctx, painter, {
      to: 'owner',
      body: `Picture ${i + 1}`,
      attachmentIds: [file.attachment_id],
    });
  }
  await sendMessage(ctx, painter, { to: 'owner', body: NEWEST });
});

/** Styles read from the page (the root tsconfig has no DOM types: page code is passed as text). */
interface Look {
  background: string;
  font: string;
  card: { background: string; radius: string } | null;
  button: { background: string; radius: string; minHeight: number } | null;
}

async function look(page: Page, buttonName: string | null): Promise<Look> {
  return (await page.evaluate(`(() => {
    const body = getComputedStyle(document.body);
    const card = document.querySelector('main');
    const button = ${JSON.stringify(buttonName)} === null ? null :
      [...document.querySelectorAll('button')].find((b) => b.textContent.trim() === ${JSON.stringify(buttonName)});
    const c = card && getComputedStyle(card);
    const b = button && getComputedStyle(button);
    return {
      background: getComputedStyle(document.documentElement).backgroundColor,
      font: body.fontFamily,
      card: c ? { background: c.backgroundColor, radius: c.borderRadius } : null,
      button: b ? { background: b.backgroundColor, radius: b.borderRadius, minHeight: button.getBoundingClientRect().height } : null,
    };
  })()`)) as Look;
}

/** Whether the element's box lies inside the timeline's visible box (1 px of rounding allowed). */
async function inTimelineView(page: Page, selector: string): Promise<boolean> {
  return (await page.evaluate(`(() => {
    const scroller = document.querySelector('.messages');
    const el = document.querySelector(${JSON.stringify(selector)});
    if (!scroller || !el) return false;
    const s = scroller.getBoundingClientRect();
    const e = el.getBoundingClientRect();
    return e.height > 0 && e.top >= s.top - 1 && e.bottom <= s.bottom + 1;
  })()`)) as boolean;
}

/** Holds every `GET /media/<id>` until `release()`, as a slow network holds thumbnails. */
function holdMedia(page: Page) {
  let open: () => void = () => undefined;
  let gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let held = 0;
  void page.route('**/media/*', async (route) => {
    held++;
    await gate;
    await route.continue();
  });
  return {
    held: () => held,
    release: () => open(),
    hold: () => {
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
    },
  };
}

describe.each(VIEWPORTS)(
  'what the owner made, the timeline and sign-in at $name ($width×$height)',
  (view) => {
    const shot = (page: Page, name: string) => screenshot(page, `${view.name}-${name}`);
    const violations: string[] = [];
    const scan = async (page: Page, screen: string, within?: string) =>
      violations.push(...(await seriousViolations(page, `${view.name} ${screen}`, within)));

    async function openContext(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
      // CSP is bypassed only so axe-core's source can be injected.
      const context = await newViewContext(stage.browser, view, { bypassCSP: true });
      const page = await context.newPage();
      const problems: string[] = [];
      collectProblems(page, problems, { console: 'except-favicon' });
      return { context, page, problems };
    }

    /** The "Agent queues" part of the sidebar: its links, or its one line when it has none. */
    const agentLinks = (page: Page) =>
      page.getByRole('navigation').getByRole('list', { name: 'Agent queues' }).getByRole('link');

    it('styles the sign-in and "link not valid" pages like the page itself', {
      timeout: 60_000,
    }, async () => {
      const { context, page } = await openContext();
      // The signed-out notice is drawn by the page with its own stylesheet: the reference look.
      await page.goto(`${stage.served.origin}/`);
      await page.getByText('You are not signed in').waitFor();
      const reference = await look(page, null);
      expect(reference.card).not.toBeNull();

      const response = await page.goto(await loginLinkFor(stage));
      expect(response?.status()).toBe(200);
      const signInLook = await look(page, 'Sign in as owner');
      expect(signInLook.background).toBe(reference.background);
      expect(signInLook.font).toBe(reference.font);
      expect(signInLook.card).toEqual(reference.card);
      // The button is the page's primary button: its accent colour, radius and 44 px touch height.
      expect(signInLook.button?.radius).toBe('8px');
      expect(signInLook.button?.minHeight).toBeGreaterThanOrEqual(44);
      expect(signInLook.button?.background).not.toBe('rgba(0, 0, 0, 0)');
      await shot(page, '60-sign-in');
      await scan(page, 'sign-in page');

      const refused = await page.goto(`${stage.served.origin}/login?code=not-a-code`);
      expect(refused?.status()).toBe(401);
      await page.getByRole('heading', { name: 'That login link is not valid' }).waitFor();
      const refusedLook = await look(page, null);
      expect(refusedLook.background).toBe(reference.background);
      expect(refusedLook.font).toBe(reference.font);
      expect(refusedLook.card).toEqual(reference.card);
      await shot(page, '61-link-not-valid');
      await scan(page, 'link not valid');
      await context.close();
      expect(violations).toEqual([]);
    });

    it('lists the agents the owner made, one added from the CLI too, and opens their queues', {
      timeout: 90_000,
    }, async () => {
      const { context, page, problems } = await openContext();
      await signIn(page, await loginLinkFor(stage));
      const nav = page.getByRole('navigation');
      // Every agent is the owner's (the owner manages them all), none shares a channel but painter.
      await nav.getByRole('link', { name: 'helper', exact: true }).waitFor();
      // (The other viewport's run may have added its own agent from the CLI already.)
      const listed = (await agentLinks(page).allTextContents()).filter(
        (name) => !name.startsWith('cliagent-'),
      );
      expect(listed).toEqual(['helper', 'megbot', 'painter']);
      expect(await nav.textContent()).not.toMatch(/no agents/i);

      const added = `cliagent-${view.name}`;
      // Added from the CLI, another process: listed live, no reload.
      await cli(stage.home, ['agent', 'add', added]);
      await nav.getByRole('link', { name: added, exact: true }).click();
      await page.getByText(`${added} has no messages yet`).waitFor();
      expect(await page.getByText("You can't see").count()).toBe(0);
      await shot(page, '62-new-agent-queue');
      await scan(page, 'queue of an agent with no messages');

      // helper's only card is in alice's DM: the owner sees that it waits, not what it says.
      if (view.isMobile) await page.getByRole('link', { name: 'Back to the list' }).click();
      await nav.getByRole('link', { name: 'helper', exact: true }).click();
      await expect.poll(() => page.getByTestId('queue-total').textContent(), POLL).toBe('1');
      await page.getByText('1 waiting in conversations you are not in').waitFor();
      expect(await page.getByText('alice only').count()).toBe(0);
      expect(await page.getByText('Nothing waiting').count()).toBe(0);
      await scan(page, 'queue with hidden cards', 'main');
      expect(problems).toEqual([]);
      await context.close();
      expect(violations).toEqual([]);
    });

    it('lists the agent a person manages, and tells a person with none so truthfully', {
      timeout: 90_000,
    }, async () => {
      const { context, page, problems } = await openContext();
      await signIn(page, await loginLinkFor(stage, 'meg'), 'meg');
      const nav = page.getByRole('navigation');
      await nav.getByRole('link', { name: 'megbot', exact: true }).waitFor();
      expect(await agentLinks(page).allTextContents()).toEqual(['megbot']);
      await nav.getByRole('link', { name: 'megbot', exact: true }).click();
      await page.getByText('megbot has no messages yet').waitFor();
      await context.clearCookies();

      await signIn(page, await loginLinkFor(stage, 'nina'), 'nina');
      await nav.getByText('You have no agents yet').waitFor();
      expect(await agentLinks(page).count()).toBe(0);
      await shot(page, '63-no-agents');
      expect(problems).toEqual([]);
      await context.close();
    });

    it('opens a DM full of images at its newest message, and shows a sent image whole', {
      timeout: 90_000,
    }, async () => {
      const { context, page, problems } = await openContext();
      const media = holdMedia(page);
      await signIn(page, await loginLinkFor(stage));
      await page.getByRole('navigation').getByRole('link', { name: '@painter' }).click();
      const newest = page.locator('article.message', { hasText: NEWEST });
      await newest.waitFor();
      // The timeline rendered while no thumbnail had arrived; now they do.
      await expect.poll(() => media.held(), POLL).toBeGreaterThan(0);
      media.release();
      const last = page.getByRole('img', { name: `picture-${IMAGE_COUNT}.png` });
      await expect
        .poll(() => last.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), POLL)
        .toBe(400);
      await expect.poll(() => inTimelineView(page, `article.message:last-of-type`), POLL).toBe(true);
      expect(await newest.textContent()).toContain(NEWEST);
      await shot(page, '64-images-newest');

      // A picture sent from the composer, its thumbnail slow again: it shows whole at the bottom.
      media.hold();
      const sentName = `sent-${view.name}.png`;
      await page.locator('input[type="file"]').setInputFiles({
        name: sentName,
        mimeType: 'image/png',
        buffer: await picture(7),
      });
      const pending = page.getByRole('list', { name: 'Attachments to send' });
      await expect.poll(() => pending.getByText('uploading…').count(), POLL).toBe(0);
      await page.getByRole('textbox', { name: 'Message @painter' }).fill('Here is mine.');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      const sent = page.getByRole('img', { name: sentName });
      await sent.waitFor({ state: 'attached' });
      media.release();
      await expect
        .poll(() => sent.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), POLL)
        .toBe(400);
      await expect.poll(() => inTimelineView(page, `img[alt="${sentName}"]`), POLL).toBe(true);
      await shot(page, '65-sent-image');
      expect(problems).toEqual([]);
      await context.close();
    });
  },
);
