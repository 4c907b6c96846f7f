// The top bar says "live" only while the host answers: frozen (SIGSTOP, the socket still open), it
// reads "reconnecting…" within seconds, and "live" again once the host runs (SIGCONT). The page
// asks the host a cheap question whenever the socket has been quiet (docs/web.md, "Live means
// answering"). Debian's Chromium via playwright-core against a real `sluice serve`.

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  collectProblems,
  loginLinkFor,
  newViewContext,
  signIn,
  useStage,
  VIEWPORTS,
} from './browser-support.js';

const stage = useStage('sluice-web-liveness-', async () => {});

/** The heartbeat notices in about 6 s (docs/web.md); a loaded machine gets room on top. */
const NOTICE = { timeout: 20_000 };

describe('the connection status while the host is frozen', () => {
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  beforeAll(async () => {
    context = await newViewContext(stage.browser, VIEWPORTS[0]);
    page = await context.newPage();
    collectProblems(page, problems);
    await signIn(page, await loginLinkFor(stage));
  });
  afterAll(() => context?.close());

  it('turns from live to reconnecting… and back', { timeout: 90_000 }, async () => {
    const status = page.locator('header.topbar [role="status"]');
    await status.getByText('live', { exact: true }).waitFor(NOTICE);
    const host = stage.served.process;
    host.kill('SIGSTOP');
    try {
      await status.getByText('reconnecting…', { exact: true }).waitFor(NOTICE);
    } finally {
      host.kill('SIGCONT');
    }
    await status.getByText('live', { exact: true }).waitFor(NOTICE);
    // And the page works again: the channel list still answers.
    await page.getByRole('button', { name: 'New channel' }).waitFor();
  });

  it('logged no page error', () => {
    expect(problems).toEqual([]);
  });
});
