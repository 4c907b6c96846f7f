// Issue 28 in Debian's Chromium against a real `sluice serve`: a person in 2,000 channels gets
// their sidebar from one `channel.list` request (the most recent first), reads more with "Show
// more", finds an old channel with the filter box (the host filters), and sees a channel no page
// has reached move to the top when it gets a message, without another `channel.list`. Before,
// the page walked every page (40 requests here) before it showed anything.

import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedChannels } from '../../bench/channels.js';
import { createChannel } from '../../src/host/channels/channels.js';
import { addPrincipal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { seriousViolations } from './axe-scan.js';
import {
  collectProblems,
  loginLinkFor,
  newViewContext,
  POLL,
  screenshot,
  signIn,
  useStage,
  VIEWPORTS,
} from './browser-support.js';

const CHANNELS = 2000;
/** web/src/channels/sidebar-list.ts SIDEBAR_PAGE. */
const PAGE = 30;

const stage = useStage('sluice-web-sidebar-', async () => {});

beforeAll(async () => {
  const ctx = stage.hostCtx;
  const owner = await resolvePrincipal(ctx, 'owner');
  const helper = await addPrincipal(ctx, { name: 'helper', kind: 'agent' });
  // Agents to find by name; one has a DM with the owner, made before the seeded channels.
  await addPrincipal(ctx, { name: 'alpha-worker', kind: 'agent' });
  await addPrincipal(ctx, { name: 'gamma-scout', kind: 'agent' });
  await sendMessage(ctx, owner, { to: 'gamma-scout', body: 'where are you?' });
  await seedChannels(ctx, owner, helper, CHANNELS);
  // Someone else's channel, with a name the filter below would match: never shown to the owner.
  const eve = await addPrincipal(ctx, { name: 'eve', kind: 'person' });
  await createChannel(ctx, eve, { name: 'ch-00070-private', members: [] });
}, 300_000);

interface Frame {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
}

async function countFrames(page: Page): Promise<Frame[]> {
  const sent: Frame[] = [];
  await page.routeWebSocket(/\/rpc$/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((text) => {
      sent.push(JSON.parse(String(text)) as Frame);
      server.send(text);
    });
  });
  return sent;
}

describe(`a person in ${CHANNELS.toLocaleString('en')} channels`, () => {
  it('gets the sidebar from one channel.list page, most recent first, and the rest on request', {
    timeout: 120_000,
  }, async () => {
    const context = await newViewContext(stage.browser, VIEWPORTS[0]);
    const page = await context.newPage();
    const problems: string[] = [];
    collectProblems(page, problems);
    const sent = await countFrames(page);
    const lists = () => sent.filter((f) => f.method === 'channel.list');
    await signIn(page, await loginLinkFor(stage));
    const labels = page.locator('.sidebar-channels .nav-label');
    await expect.poll(() => labels.count(), POLL).toBe(PAGE);
    expect(await labels.first().textContent()).toBe(`#ch-0${CHANNELS}`);
    // The agents list and everything else are in: still one channel.list, with no cursor.
    await page.getByRole('navigation').getByRole('link', { name: 'helper', exact: true }).waitFor();
    expect(lists()).toHaveLength(1);
    expect(lists()[0]?.params).toMatchObject({ order: 'activity', limit: PAGE });
    await screenshot(page, 'desktop-50-sidebar-first-page');

    await page.getByRole('button', { name: 'Show more', exact: true }).click();
    await expect.poll(() => labels.count(), POLL).toBe(2 * PAGE);
    expect(lists()).toHaveLength(2);
    expect(lists()[1]?.params?.cursor).toEqual(expect.any(String));

    // An old channel no page has reached gets a message: it comes first, pushed, not re-listed.
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    await sendMessage(stage.hostCtx, owner, { to: '#ch-00003', body: 'back from the archive' });
    await expect.poll(() => labels.first().textContent(), POLL).toBe('#ch-00003');
    expect(lists()).toHaveLength(2);

    // The filter asks the host, and lists only the person's own channels.
    // These are among the oldest: the host's first filtered page examines the newest 1,000 channels,
    // finds none and says where to go on; the page asks again by itself.
    await page.getByRole('searchbox', { name: 'Filter channels and agents' }).fill('CH-0007');
    await expect
      .poll(async () => (await labels.allTextContents()).sort(), POLL)
      .toEqual(Array.from({ length: 10 }, (_, i) => `#ch-0007${i}`).sort());
    const filtered = lists().filter((f) => f.params?.filter === 'CH-0007');
    expect(filtered.length).toBeGreaterThan(1);
    await screenshot(page, 'desktop-51-sidebar-filter');
    await page.getByRole('searchbox', { name: 'Filter channels and agents' }).fill('');
    await expect.poll(() => labels.first().textContent(), POLL).toBe('#ch-00003');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('opens a link to a channel no page has reached with one request for that channel', {
    timeout: 120_000,
  }, async () => {
    const context = await newViewContext(stage.browser, VIEWPORTS[0]);
    const page = await context.newPage();
    const problems: string[] = [];
    collectProblems(page, problems);
    const sent = await countFrames(page);
    await signIn(page, await loginLinkFor(stage));
    await page.locator('.sidebar-channels .nav-label').first().waitFor();
    await page.evaluate(`window.location.hash = '#/channel/c_seed00000011'`);
    await page.getByRole('navigation').getByRole('link', { name: '#ch-00011', exact: true }).waitFor();
    expect(
      sent.filter((f) => f.method === 'channel.list' && f.params?.channelId === 'c_seed00000011'),
    ).toHaveLength(1);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('finds an agent and its DM with the filter box; a skip link is the first stop for the keyboard', {
    timeout: 120_000,
  }, async () => {
    // CSP bypassed only so axe-core's source can be injected.
    const context = await newViewContext(stage.browser, VIEWPORTS[0], { bypassCSP: true });
    const page = await context.newPage();
    const problems: string[] = [];
    collectProblems(page, problems);
    await signIn(page, await loginLinkFor(stage));
    const nav = page.getByRole('navigation');
    await nav.getByRole('link', { name: 'helper', exact: true }).waitFor();

    // Tab from the top: the skip link first, and it takes focus to the main pane.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to main content');
    expect(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')).not.toBe('none');
    await page.keyboard.press('Enter');
    expect(await page.evaluate('document.activeElement.tagName')).toBe('MAIN');
    expect(new URL(page.url()).hash).toBe('');

    const agents = page.locator('ul[aria-labelledby="agents-heading"] .nav-label');
    const channels = page.locator('.sidebar-channels .nav-label');
    await page.getByRole('searchbox', { name: 'Filter channels and agents' }).fill('SCOUT');
    await expect.poll(() => agents.allTextContents(), POLL).toEqual(['gamma-scout']);
    await expect.poll(() => channels.allTextContents(), POLL).toEqual(['@gamma-scout']);
    await page.getByRole('searchbox', { name: 'Filter channels and agents' }).fill('nobody-like-this');
    await page.getByText('No agent matches "nobody-like-this".').waitFor();
    expect(await seriousViolations(page, 'sidebar-filtered')).toEqual([]);
    await page.getByRole('searchbox', { name: 'Filter channels and agents' }).fill('');
    await expect
      .poll(() => agents.allTextContents(), POLL)
      .toEqual(['alpha-worker', 'gamma-scout', 'helper']);
    expect(problems).toEqual([]);
    await context.close();
  });
});
