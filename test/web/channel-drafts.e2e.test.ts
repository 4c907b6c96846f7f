// A field bug in Debian's Chromium against a real `sluice serve`: a draft typed in a channel's
// composer was lost when the person switched to another channel and back. Drafts are kept per
// channel for the page's life and in sessionStorage (a reload of the tab keeps them, closing the
// tab or logging out does not); a draft whose send was not confirmed keeps its idempotency key, so
// Retry after switching away and back still cannot store the message twice.

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { type LostSendAnswers, routeSendAnswers, storedWithBody } from './lost-send-answer.js';

const stage = useStage('sluice-web-drafts-', async (_home, ctx) => {
  await seedAs.agent(ctx, 'scribe');
  await seedAs.channel(ctx, 'north', ['scribe']);
  await seedAs.channel(ctx, 'south', ['scribe']);
});

describe('a draft in a channel’s composer', () => {
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  let answers: LostSendAnswers;

  const open = async (name: string) => {
    await page
      .getByRole('navigation')
      .getByRole('link', { name: `#${name}`, exact: true })
      .click();
    await page.getByLabel(`Message #${name}`).waitFor();
  };
  const draftIn = (name: string) => page.getByLabel(`Message #${name}`).inputValue();

  beforeAll(async () => {
    context = await newViewContext(stage.browser, VIEWPORTS[0]);
    page = await context.newPage();
    collectProblems(page, problems, { console: 'except-favicon', http: true });
    answers = await routeSendAnswers(page);
    await signIn(page, await loginLinkFor(stage));
  });
  afterAll(() => context?.close());

  it('is still there after switching to another channel and back, and after a reload', {
    timeout: 60_000,
  }, async () => {
    await open('north');
    await page.getByLabel('Message #north').fill('half a thought about the north');
    await open('south');
    expect(await draftIn('south')).toBe('');
    await page.getByLabel('Message #south').fill('southern notes');
    await open('north');
    expect(await draftIn('north')).toBe('half a thought about the north');
    await open('south');
    expect(await draftIn('south')).toBe('southern notes');
    await page.reload();
    await page.getByLabel('Message #south').waitFor();
    expect(await draftIn('south')).toBe('southern notes');
    await open('north');
    expect(await draftIn('north')).toBe('half a thought about the north');
  });

  it('keeps an unconfirmed send’s key: Retry after switching away and back stores it once', {
    timeout: 60_000,
  }, async () => {
    const body = 'half a thought about the north';
    answers.dropNextAnswer();
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page
      .locator('.composer [role="alert"]')
      .getByText('Not confirmed')
      .waitFor({ timeout: POLL.timeout });
    expect(await storedWithBody(stage.hostCtx, body)).toBe(1);
    await open('south');
    await open('north');
    expect(await draftIn('north')).toBe(body);
    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await expect.poll(() => draftIn('north'), POLL).toBe('');
    const keys = answers.sends.map((f) => f.params?.idempotency_key);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(await storedWithBody(stage.hostCtx, body)).toBe(1);
    // Sent: the draft is gone for good, also after switching.
    await open('south');
    await open('north');
    expect(await draftIn('north')).toBe('');
  });

  it('logged no page error or console error', () => {
    expect(problems).toEqual([]);
  });
});
