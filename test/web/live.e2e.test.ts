// Live everything (issue 14 items 2-3, and replies from item 2 of "Read comfortably"): the channel
// list follows memberships made anywhere (another process's CLI, the host API) with unread counts,
// without reload and without polling; replies show their parent's author and first line and lead to
// it; each of the person's own messages shows, per agent, where its copy stands, updated live.
// Debian's Chromium via playwright-core against a real `sluice serve`, at 1280×800 and 390×844.

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel, removeMember } from '../../src/host/channels/channels.js';
import { resolveAgent, resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import { resumeQueue } from '../../src/host/queue/queue.js';
import { channelRead } from '../../src/host/reads/index.js';
import { beginTurn, countDispatch, endTurn, receivedInProcess } from '../../src/host/turns/index.js';
import { seriousViolations } from './axe-scan.js';
import {
  cli,
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

const stage = useStage('sluice-web-live-', async (_home, ctx) => {
  for (const view of VIEWPORTS) {
    await seedAs.agent(ctx, `helper-${view.name}`);
    await seedAs.agent(ctx, `turner-${view.name}`, 'turn');
    await seedAs.person(ctx, `bob-${view.name}`);
    // bob names helper in a group of his: only an agent's managers add it.
    await seedAs.manager(ctx, `helper-${view.name}`, `bob-${view.name}`);
  }
});

describe.each(VIEWPORTS)('live at a $name viewport ($width×$height)', (view) => {
  const helper = `helper-${view.name}`;
  const turner = `turner-${view.name}`;
  const bob = `bob-${view.name}`;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  /** `channel.list` requests the page sent: once at load; live notifications do the rest. */
  let listRequests = 0;
  /** Serious or critical axe-core findings on each screen shot below (none expected). */
  const violations: string[] = [];
  /**
   * A screenshot (SLUICE_SCREENSHOTS=1) and an axe scan: of the whole page, or with `axe` a
   * selector, of only what changed on a screen scanned before; `axe: false` for none.
   */
  const shot = async (name: string, options: { axe?: false | string } = {}) => {
    await screenshot(page, `${view.name}-${name}`);
    if (options.axe !== false)
      violations.push(...(await seriousViolations(page, `${view.name}-${name}`, options.axe)));
  };
  const nav = () => page.getByRole('navigation');
  /** Hash routes change in place (no reload): what "without reload" is checked against. */
  const goHash = (hash: string) => page.evaluate(`window.location.hash = ${JSON.stringify(hash)}`);
  const toList = async () => {
    if (view.isMobile) await goHash('#/');
  };
  const open = (channelId: string) => goHash(`#/channel/${encodeURIComponent(channelId)}`);
  const navLink = (label: string) => nav().getByRole('link', { name: label, exact: true });
  const badge = (label: string) => navLink(label).locator('.unread-badge');
  let team = '';

  beforeAll(async () => {
    // axe-core is injected as a script tag, which the page's CSP would refuse.
    context = await newViewContext(stage.browser, view, { bypassCSP: true });
    page = await context.newPage();
    // The page has no favicon; Chromium asks for one now and then.
    collectProblems(page, problems, { console: 'except-favicon', http: true });
    page.on('websocket', (ws) =>
      ws.on('framesent', (frame) => {
        if (typeof frame.payload === 'string' && frame.payload.includes('"method":"channel.list"'))
          listRequests += 1;
      }),
    );
    await signIn(page, await loginLinkFor(stage));
    await page.locator('.status-open').waitFor();
    // The first list is read: from here on, only notifications change it.
    await page.getByRole('heading', { name: 'Channels' }).waitFor();
    await page.getByText('Loading channels…').waitFor({ state: 'detached' });
  });

  afterAll(async () => {
    await context?.close();
  });

  it('a channel someone else makes with the person in it appears at once, and its unread count moves live', {
    timeout: 90_000,
  }, async () => {
    const before = listRequests;
    // Another process: bob's CLI makes the channel with the owner and an agent in it.
    await cli(stage.home, [
      'channel',
      'create',
      `team-${view.name}`,
      '--members',
      `owner,${helper}`,
      '--as',
      bob,
    ]);
    // The owner is only invited (consent); accepting from the CLI, another process, joins.
    await cli(stage.home, ['channel', 'accept', `#team-${view.name}`]);
    await toList();
    await navLink(`#team-${view.name}`).waitFor();
    team = (await navLink(`#team-${view.name}`).getAttribute('data-channel-id')) ?? '';
    expect(team).not.toBe('');
    await cli(stage.home, [
      'message',
      'send',
      `#team-${view.name}`,
      '-m',
      'Morning! Build is green.',
      '--as',
      helper,
    ]);
    await cli(stage.home, ['message', 'send', `#team-${view.name}`, '-m', 'Deploying at noon.', '--as', bob]);
    await expect.poll(() => badge(`#team-${view.name}`).textContent(), POLL).toBe('2');
    // A DM the agent starts from the CLI arrives with its count too.
    await cli(stage.home, ['message', 'send', 'owner', '-m', 'Are you there?', '--as', helper]);
    await expect.poll(() => badge(`@${helper}`).textContent(), POLL).toBe('1');
    await expect
      .poll(() => navLink(`#team-${view.name}`).getAttribute('aria-describedby'), POLL)
      .not.toBeNull();
    // The home screen is scanned whole in members-and-queue; here the sidebar with its counts.
    await shot('30-live-sidebar', { axe: 'nav.sidebar' });
    // Nothing was polled: the list was never asked for again.
    expect(listRequests).toBe(before);

    // Reading the channel clears its count.
    await open(team);
    await page.locator('article.message', { hasText: 'Deploying at noon.' }).waitFor();
    await toList();
    await expect.poll(() => badge(`#team-${view.name}`).count(), POLL).toBe(0);
    await expect.poll(() => badge(`@${helper}`).textContent(), POLL).toBe('1');
    expect(listRequests).toBe(before);
  });

  it('an invitation shows at once with Accept and Decline; the channel is listed only once accepted', {
    timeout: 90_000,
  }, async () => {
    const bobP = await resolvePrincipal(stage.hostCtx, bob);
    await createChannel(stage.hostCtx, bobP, { name: `maybe-${view.name}`, members: ['owner'] });
    const gone = await createChannel(stage.hostCtx, bobP, { name: `brief-${view.name}`, members: ['owner'] });
    await toList();
    const invitations = page.getByRole('region', { name: 'Invitations' });
    await invitations.getByText(`#brief-${view.name}`).waitFor();
    await invitations.getByText(`#maybe-${view.name}`).waitFor();
    expect(await invitations.getByText(`from ${bob}`).count()).toBe(2);
    expect(await navLink(`#brief-${view.name}`).count()).toBe(0);
    await shot('31-invitations', { axe: 'nav.sidebar' });
    await page.getByRole('button', { name: `Decline #maybe-${view.name}` }).click();
    await invitations.getByText(`#maybe-${view.name}`).waitFor({ state: 'detached' });
    expect(await navLink(`#maybe-${view.name}`).count()).toBe(0);
    await page.getByRole('button', { name: `Accept #brief-${view.name}` }).click();
    // Accepting opens the channel; the list has it, and no invitation is left.
    await page.waitForFunction(
      `window.location.hash.includes(${JSON.stringify(encodeURIComponent(gone.id))})`,
    );
    await toList();
    await navLink(`#brief-${view.name}`).waitFor();
    await invitations.waitFor({ state: 'detached' });
    expect(problems).toEqual([]);
  });

  it('being removed from a channel takes it off the list, without reload', async () => {
    const bobP = await resolvePrincipal(stage.hostCtx, bob);
    // #brief, accepted in the test before.
    await toList();
    const gone = (await navLink(`#brief-${view.name}`).getAttribute('data-channel-id')) ?? '';
    expect(gone).not.toBe('');
    await removeMember(stage.hostCtx, bobP, gone, 'owner');
    await navLink(`#brief-${view.name}`).waitFor({ state: 'detached' });
  });

  it('a reply quotes its parent, and pressing the quote shows the parent even when it was not loaded', {
    timeout: 90_000,
  }, async () => {
    const helperP = await resolveAgent(stage.hostCtx, helper);
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    // The parent must reach the page only through a history page, never as a live event. The serve
    // process learns of these sends (made through another connection) by polling, and dispatches
    // each event to the subscriptions present when it reads it: a timeline that subscribed before
    // the host caught up would get the parent live. So the channel is one the page never opened,
    // and the channel is opened only after the host has dispatched every send (below).
    const plans = (
      await createChannel(stage.hostCtx, owner, { name: `plans-${view.name}`, members: [helper] })
    ).id;
    await toList();
    await navLink(`#plans-${view.name}`).waitFor();
    const parent = await sendMessage(stage.hostCtx, owner, {
      to: plans,
      body: `**Plan for Friday** ${view.name}: ship the live sidebar\nthen the receipts\nthen rest`,
    });
    // Enough later messages that the parent is not on the first page (40).
    for (let i = 0; i < 45; i++) await sendMessage(stage.hostCtx, owner, { to: plans, body: `filler ${i}` });
    // The host dispatches events in the order they were committed: once the page lists a channel
    // made after the sends, every send was dispatched, to no timeline.
    await createChannel(stage.hostCtx, owner, { name: `after-plans-${view.name}`, members: [helper] });
    await navLink(`#after-plans-${view.name}`).waitFor();
    await open(plans);
    await page.locator('article.message', { hasText: 'filler 44' }).waitFor();
    await sendMessage(stage.hostCtx, helperP, {
      to: plans,
      body: 'On it: the sidebar lands first.',
      replyTo: parent.message_id,
    });
    const reply = page.locator('article.message', { hasText: 'On it: the sidebar lands first.' });
    await reply.waitFor();
    const quote = reply.getByRole('button', { name: /^Replying to owner: / });
    await expect
      .poll(() => quote.textContent(), POLL)
      .toBe(`owner:Plan for Friday ${view.name}: ship the live sidebar…`);
    expect(await quote.textContent()).not.toContain('then the receipts');
    // No axe here: its contrast checks scroll the timeline, which would load the parent early.
    await shot('31-reply-quote', { axe: false });
    const parentArticle = page.locator(`article.message[data-message-id="${parent.message_id}"]`);
    expect(await parentArticle.count()).toBe(0);
    await quote.click();
    await parentArticle.waitFor();
    await expect
      .poll(() => page.evaluate('document.activeElement?.dataset.messageId'), POLL)
      .toBe(parent.message_id);
    const box = await parentArticle.boundingBox();
    expect(box && box.y + box.height > 0 && box.y < view.height).toBe(true);
    // The timeline was scanned whole in the other files: here the quote and the parent it led to.
    await shot('32-reply-parent-shown', {
      axe: `article.message[data-message-id="${parent.message_id}"], article.message[data-message-id="${await reply.getAttribute('data-message-id')}"]`,
    });

    // Replying from the page: "Reply" on the agent's message, then the composer sends reply_to.
    const replyId = await reply.getAttribute('data-message-id');
    await reply.getByRole('button', { name: `Reply to ${helper}`, exact: true }).click();
    await page.locator('.composer .replying-to').waitFor();
    const composer = page.getByRole('textbox', { name: `Message #plans-${view.name}` });
    await expect
      .poll(() => composer.evaluate((el) => el === el.ownerDocument.activeElement), POLL)
      .toBe(true);
    await composer.fill('Thanks, ship it.');
    await shot('32b-replying', { axe: '.composer' });
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const answer = page.locator('article.message.mine', { hasText: 'Thanks, ship it.' });
    await answer
      .getByRole('button', { name: `Replying to ${helper}: On it: the sidebar lands first.` })
      .waitFor();
    await page.locator('.composer .replying-to').waitFor({ state: 'detached' });
    const stored = await stage.hostCtx.store.db
      .selectFrom('messages')
      .select(['reply_to'])
      .where('body', '=', 'Thanks, ship it.')
      .where('channel_id', '=', plans)
      .executeTakeFirstOrThrow();
    expect(stored.reply_to).toBe(replyId);
  });

  it("each of the person's messages shows every agent's state, updated live as the agents work", {
    timeout: 90_000,
  }, async () => {
    const ownerP = await resolvePrincipal(stage.hostCtx, 'owner');
    const work = await createChannel(stage.hostCtx, ownerP, {
      name: `work-${view.name}`,
      members: [helper, turner],
    });
    await toList();
    await navLink(`#work-${view.name}`).waitFor();
    await open(work.id);
    const composer = page.getByRole('textbox', { name: `Message #work-${view.name}` });
    await composer.fill('Please review the release notes.');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const mine = page.locator('article.message.mine', { hasText: 'Please review the release notes.' });
    await mine.waitFor();
    const chip = (agent: string) => mine.locator(`.receipt[data-agent="${agent}"]`);
    // Sent is not delivered: the line says "stored, not read yet" until a model is given it.
    await expect.poll(() => chip(helper).getAttribute('data-state'), POLL).toBe('stored');
    await expect.poll(() => chip(turner).getAttribute('data-state'), POLL).toBe('stored');
    expect(await chip(turner).textContent()).toBe(`${turner} stored, not read yet`);
    // A channel timeline is scanned whole elsewhere; what is new here is the receipts line.
    await shot('33-receipts-waiting', { axe: 'article.message.mine' });
    const messageId = (await mine.getAttribute('data-message-id')) ?? '';

    // The explicit agent archives it; the turn agent's turn fails (returned), is resumed, then succeeds.
    await archiveMessages(stage.hostCtx, await resolveAgent(stage.hostCtx, helper), [messageId]);
    await expect.poll(() => chip(helper).textContent(), POLL).toBe(`${helper} archived`);
    await failTurnOver(stage.hostCtx, turner, 'overloaded');
    await expect.poll(() => chip(turner).getAttribute('data-state'), POLL).toBe('returned');
    expect(await chip(turner).textContent()).toBe(`${turner} returned: model_error: overloaded`);
    await shot('34-receipts-returned', { axe: 'article.message.mine' });
    await resumeQueue(stage.hostCtx, ownerP, turner, messageId);
    await expect.poll(() => chip(turner).getAttribute('data-state'), POLL).toBe('stored');
    const turnerP = await resolveAgent(stage.hostCtx, turner);
    const ok = await beginTurn(stage.hostCtx, turnerP);
    // A driver carries it to its client (offered), the model reads it whole (received whole):
    // no inbox entry moves for either, and the line follows each live.
    await countDispatch(stage.hostCtx, turnerP, [messageId]);
    await expect.poll(() => chip(turner).getAttribute('data-state'), POLL).toBe('offered');
    await receivedInProcess(
      stage.hostCtx,
      await channelRead(stage.hostCtx, turnerP, { unread: true, limit: 20 }),
    );
    await expect.poll(() => chip(turner).textContent(), POLL).toBe(`${turner} received whole`);
    await endTurn(stage.hostCtx, turnerP, ok.id, { ok: true });
    await expect.poll(() => chip(turner).textContent(), POLL).toBe(`${turner} handled`);
    await shot('35-receipts-handled', { axe: 'article.message.mine' });
    await sendMessage(stage.hostCtx, turnerP, {
      to: work.id,
      body: 'Reviewed: two typos fixed.',
      replyTo: messageId,
    });
    await expect.poll(() => chip(turner).textContent(), POLL).toBe(`${turner} answered`);
    // Others' messages carry no receipts line; nothing was re-read to get there.
    expect(await page.locator('article.message:not(.mine) .receipt-list').count()).toBe(0);
  });

  it('logged no page error or console error, and axe found nothing serious on these screens', () => {
    expect(problems).toEqual([]);
    expect(violations).toEqual([]);
  });
});
