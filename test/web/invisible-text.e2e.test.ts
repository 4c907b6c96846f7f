// A sender cannot spoof text direction on the page: a bidi override (U+202E) or another invisible
// character in a subject, a body or a queue card's preview shows as its escape (`\u202e`), the
// host's own rule (src/core/reveal-invisible.ts), while line breaks and emoji joiners stay as
// written. Debian's Chromium via playwright-core against a real `sluice serve`.

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { seriousViolations } from './axe-scan.js';
import {
  collectProblems,
  loginLinkFor,
  newViewContext,
  seedAs,
  signIn,
  useStage,
  VIEWPORTS,
} from './browser-support.js';

const RLO = '\u202e';
const FAMILY = '\u{1F469}\u200d\u{1F467}';

const stage = useStage('sluice-web-invisible-', async (_home, ctx) => {
  await seedAs.agent(ctx, 'reader');
  await seedAs.channel(ctx, 'spoof', ['reader']);
  await sendMessage(ctx, await resolvePrincipal(ctx, 'owner'), {
    to: '#spoof',
    subject: `invoice ${RLO}fdp.exe`,
    body: `pay to ${RLO}gnp.tab\nsecond line ${FAMILY}\u200b`,
  });
});

describe('invisible characters from a sender', () => {
  const view = VIEWPORTS[0];
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  beforeAll(async () => {
    context = await newViewContext(stage.browser, view, { bypassCSP: true });
    page = await context.newPage();
    collectProblems(page, problems, { console: 'except-favicon', http: true });
    await signIn(page, await loginLinkFor(stage));
  });
  afterAll(() => context?.close());

  it('show as escapes in a message’s subject and body; line breaks and emoji joiners stay', async () => {
    await page.getByRole('navigation').getByRole('link', { name: '#spoof', exact: true }).click();
    const message = page.locator('article.message', { hasText: 'pay to' });
    await message.waitFor();
    expect(await message.locator('.subject').textContent()).toBe('invoice \\u202efdp.exe');
    const body = (await message.locator('.body').textContent()) ?? '';
    expect(body).toBe(`pay to \\u202egnp.tab\nsecond line ${FAMILY}\\u200b`);
    expect(await message.textContent()).not.toContain(RLO);
    expect(await seriousViolations(page, 'invisible-text-timeline', 'article.message')).toEqual([]);
  });

  it('show as escapes in the agent’s queue card and in the card reader', async () => {
    await page.evaluate(`window.location.hash = '#/queue/reader'`);
    const card = page.locator('button.card', { hasText: 'pay to' });
    await card.waitFor();
    expect(await card.locator('.card-preview').textContent()).toContain('pay to \\u202egnp.tab');
    expect(await card.textContent()).not.toContain(RLO);
    await card.click();
    const reader = page.getByTestId('reader-body');
    await reader.waitFor();
    expect(await reader.textContent()).toBe(`pay to \\u202egnp.tab\nsecond line ${FAMILY}\\u200b`);
  });

  it('logged no page error or console error', () => {
    expect(problems).toEqual([]);
  });
});
