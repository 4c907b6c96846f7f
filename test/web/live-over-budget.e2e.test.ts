// A live message whose record does not fit the connection's reply budget even compact comes as a
// stub (`LiveMessageStub`: no author, no body). The timeline shows it as a row that says so and
// reads the text with `message.read` when asked, instead of rendering the stub as a message (which
// had no author to show). Debian's Chromium against a host served in this process with a small
// `replyBytes` (`sluice serve` has no setting for it), at 1280×800.

import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { issueLoginCode } from '../../src/host/identity/sessions.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';
import { REPO_ROOT } from '../support/host.js';
import {
  collectProblems,
  ensurePageBuilt,
  launchChromium,
  newViewContext,
  POLL,
  signIn,
  VIEWPORTS,
} from './browser-support.js';

/** JSON writes U+0001 as six bytes: a 512-byte preview and subject of them are over 6 KiB. */
const ESCAPED = '\u0001';

describe('a live message over the reply budget in the timeline', () => {
  let h: ServedHost;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    ensurePageBuilt();
    h = await openServedHost({ limits: { replyBytes: 6 * 1024 }, webRoot: join(REPO_ROOT, 'web/dist') });
    browser = await launchChromium();
    context = await newViewContext(browser, VIEWPORTS[0]);
    page = await context.newPage();
    collectProblems(page, problems, { console: 'except-favicon' });
    await signIn(page, `${h.server.url}/login?code=${(await issueLoginCode(h.ctx, 'owner')).code}`);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await h?.close();
  });

  it('shows a row that says so and reads the text on request', { timeout: 90_000 }, async () => {
    await h.agent('helper');
    const ops = await createChannel(h.ctx, h.owner, { name: 'ops', members: ['helper'] });
    await sendMessage(h.ctx, h.owner, { to: ops.id, body: 'Small enough to show.' });
    await page.evaluate(
      `window.location.hash = ${JSON.stringify(`#/channel/${encodeURIComponent(ops.id)}`)}`,
    );
    await page.locator('article.message', { hasText: 'Small enough to show.' }).waitFor();

    const big = await sendMessage(h.ctx, h.owner, {
      to: ops.id,
      subject: ESCAPED.repeat(600),
      body: `${ESCAPED.repeat(2_000)}\nThe end of the report.`,
    });
    const row = page.locator(`article.message[data-message-id="${big.message_id}"]`);
    await row.getByText('This message is too large to show here.').waitFor();
    await row.getByRole('button', { name: /Show its text/ }).click();
    await row.getByText('The end of the report.').waitFor();
    await expect.poll(() => row.getByRole('button', { name: /Show its text/ }).count(), POLL).toBe(0);
    // The message before it is still there, and nothing went wrong on the page.
    await page.locator('article.message', { hasText: 'Small enough to show.' }).waitFor();
    expect(problems).toEqual([]);
  });
});
