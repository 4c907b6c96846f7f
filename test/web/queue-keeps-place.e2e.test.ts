// A field bug in Debian's Chromium against a real `sluice serve`: a person partway down an agent's
// queue, with a card focused, lost their place when the agent consumed the head card. The page
// re-reads the window around the card in view; if the person moved on while that read was on its
// way (scrolled or tabbed), the list jumped back to the top and focus fell out of the list. The card
// they are on must stay where it is on screen, and focused; the consumed head just goes above.

import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { resolveAgent } from '../../src/host/identity/principals.js';
import { channelRead } from '../../src/host/reads/index.js';
import { beginTurn, endTurn, receivedInProcess } from '../../src/host/turns/index.js';
import {
  collectProblems,
  loginLinkFor,
  newViewContext,
  POLL,
  seedAs,
  signIn,
  useStage,
  VIEWPORTS,
} from './browser-support.js';

/** web/src/queue/card-list.tsx CARD_HEIGHT. */
const CARD_HEIGHT = 108;
const CARDS = 30;

const stage = useStage('sluice-web-queue-place-', async (_home, ctx) => {
  await seedAs.agent(ctx, 'digger', 'turn');
  await seedAs.channel(ctx, 'dig', ['digger']);
  for (let i = 0; i < CARDS; i++) await seedAs.message(ctx, '#dig', `job ${String(i).padStart(2, '0')}`);
});

/** The focused card's message id and its top edge relative to the list's scroll box. */
function focusedCard(page: Page) {
  return page.evaluate(`(() => {
    const el = document.activeElement;
    const box = document.querySelector('.card-list');
    if (!el || !box || !el.dataset.messageId) return null;
    return { id: el.dataset.messageId, top: Math.round(el.getBoundingClientRect().top - box.getBoundingClientRect().top) };
  })()`) as Promise<{ id: string; top: number } | null>;
}

/** The agent takes its head card in a turn that succeeds: the card leaves the queue. */
async function consumeHead(): Promise<void> {
  const agent = await resolveAgent(stage.hostCtx, 'digger');
  const turn = await beginTurn(stage.hostCtx, agent);
  await receivedInProcess(stage.hostCtx, await channelRead(stage.hostCtx, agent, { unread: true, limit: 1 }));
  await endTurn(stage.hostCtx, agent, turn.id, { ok: true });
}

it.each(VIEWPORTS)(
  'keeps the focused card in place when the agent consumes the head card ($name)',
  {
    timeout: 120_000,
  },
  async (view) => {
    const context = await newViewContext(stage.browser, view);
    const page = await context.newPage();
    const problems: string[] = [];
    collectProblems(page, problems);
    // Re-reads of the window (`queue.page {around}`) are held until the test lets them through.
    let holding = false;
    const held: string[] = [];
    let forward: (text: string) => void = () => {};
    await page.routeWebSocket(/\/rpc$/, (ws) => {
      const server = ws.connectToServer();
      forward = (text) => server.send(text);
      ws.onMessage((text) => {
        const frame = JSON.parse(String(text)) as { method?: string; params?: { around?: string } };
        if (holding && frame.method === 'queue.page' && frame.params?.around) held.push(String(text));
        else server.send(text);
      });
    });
    await signIn(page, await loginLinkFor(stage));
    await page.goto(`${stage.served.origin}/#/queue/digger`);
    const list = page.locator('ul.cards');
    const height = () => list.evaluate((el) => el.style.height);
    await expect.poll(height, POLL).toMatch(/px$/);
    let cards = Number.parseInt(await height(), 10) / CARD_HEIGHT;
    const first = CARDS - cards;
    const job = (n: number) =>
      page.locator('.card', { hasText: `job ${String(first + n).padStart(2, '0')}` });

    // Partway down, a card focused; the head card is out of view.
    await page.locator('.card-list').evaluate(
      (el, top) => {
        el.scrollTop = top;
      },
      4 * CARD_HEIGHT + 30,
    );
    await job(6).focus();

    // The agent consumes the head; while the page's re-read is on its way the person moves on a card.
    holding = true;
    await consumeHead();
    await expect.poll(() => held.length, POLL).toBe(1);
    await page.locator('.card-list').evaluate(
      (el, top) => {
        el.scrollTop = top;
      },
      5 * CARD_HEIGHT + 30,
    );
    await job(7).focus();
    const before = await focusedCard(page);
    expect(before).not.toBeNull();
    holding = false;
    for (const text of held.splice(0)) forward(text);
    cards -= 1;
    await expect.poll(height, POLL).toBe(`${cards * CARD_HEIGHT}px`);

    // Same card, same place on screen, still focused.
    expect(await focusedCard(page)).toEqual(before);
    expect(problems).toEqual([]);
    await context.close();
  },
);
