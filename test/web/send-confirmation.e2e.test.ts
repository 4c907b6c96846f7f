// A send whose answer is lost is "not confirmed", never "not sent", and its retry cannot store the
// message twice: the composer gives each draft an idempotency key once and sends it again with a
// retry (the host keeps a send per key, docs/rpc.md). The WebSocket between the page and the host
// is routed (`routeWebSocket`): the host stores the first send, and its answer is dropped together
// with the connection, as when a network drops mid-request. Debian's Chromium via playwright-core
// against a real `sluice serve`.

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from './axe-scan.js';
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

const stage = useStage('sluice-web-send-confirm-', async (_home, ctx) => {
  await seedAs.agent(ctx, 'listener');
  await seedAs.channel(ctx, 'talk', ['listener']);
});

describe('a send whose answer is lost', () => {
  const view = VIEWPORTS[0];
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  let answers: LostSendAnswers;

  beforeAll(async () => {
    context = await newViewContext(stage.browser, view, { bypassCSP: true });
    page = await context.newPage();
    collectProblems(page, problems, { console: 'except-favicon', http: true });
    answers = await routeSendAnswers(page, { dropFirst: true });
    await signIn(page, await loginLinkFor(stage));
    await page.getByRole('navigation').getByRole('link', { name: '#talk', exact: true }).click();
    await page.getByLabel('Message #talk').waitFor();
  });
  afterAll(() => context?.close());

  it('says not confirmed, and Retry sends the same key so the message is stored once', async () => {
    const body = 'ship the release notes';
    await page.getByLabel('Message #talk').fill(body);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const alert = page.locator('.composer [role="alert"]');
    await alert.getByText('Not confirmed').waitFor({ timeout: POLL.timeout });
    expect(await alert.textContent()).not.toContain('not sent');
    expect(await storedWithBody(stage.hostCtx, body)).toBe(1);
    // The draft is kept for the retry.
    expect(await page.getByLabel('Message #talk').inputValue()).toBe(body);
    expect(await seriousViolations(page, 'send-not-confirmed', '.composer')).toEqual([]);
    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    // Confirmed: the draft is cleared.
    await expect.poll(() => page.getByLabel('Message #talk').inputValue(), POLL).toBe('');
    expect(await alert.count()).toBe(0);
    expect(answers.sends.length).toBe(2);
    const [first, retry] = answers.sends.map((f) => f.params?.idempotency_key);
    expect(typeof first).toBe('string');
    expect(retry).toBe(first);
    expect(await storedWithBody(stage.hostCtx, body)).toBe(1);
    // Shown once in the timeline, too.
    await page.locator('article.message', { hasText: body }).first().waitFor();
    expect(await page.locator('article.message', { hasText: body }).count()).toBe(1);
  });

  it('gives the next draft a key of its own', async () => {
    const body = 'and the changelog';
    await page.getByLabel('Message #talk').fill(body);
    await page.keyboard.press('Enter');
    await page.locator('article.message', { hasText: body }).waitFor();
    expect(await storedWithBody(stage.hostCtx, body)).toBe(1);
    const keys = answers.sends.map((f) => f.params?.idempotency_key);
    expect(keys.length).toBe(3);
    expect(keys[2]).not.toBe(keys[0]);
  });

  it('logged no page error or console error', () => {
    expect(problems).toEqual([]);
  });
});
