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

const stage = useStage('sluice-web-drafts-', async (_home, ctx) => {
  await seedAs.agent(ctx, 'scribe');
  await seedAs.channel(ctx, 'north', ['scribe']);
  await seedAs.channel(ctx, 'south', ['scribe']);
});

interface Frame {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
}

async function storedWithBody(body: string): Promise<number> {
  const rows = await stage.hostCtx.store.db
    .selectFrom('messages')
    .select('id')
    .where('body', '=', body)
    .execute();
  return rows.length;
}

describe('a draft in a channel’s composer', () => {
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const sends: Frame[] = [];
  let dropNextSendAnswer = false;

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
    // The answer to a send can be dropped with its connection (as in send-confirmation.e2e.test.ts).
    await page.routeWebSocket(/\/rpc$/, (ws) => {
      const server = ws.connectToServer();
      let dropId: number | null = null;
      ws.onMessage((text) => {
        const frame = JSON.parse(String(text)) as Frame;
        if (frame.method === 'message.send') {
          sends.push(frame);
          if (dropNextSendAnswer) {
            dropNextSendAnswer = false;
            dropId = frame.id ?? null;
          }
        }
        server.send(text);
      });
      server.onMessage((text) => {
        const frame = JSON.parse(String(text)) as Frame;
        if (dropId !== null && frame.id === dropId) {
          dropId = null;
          void ws.close();
          void server.close();
          return;
        }
        ws.send(text);
      });
    });
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
    dropNextSendAnswer = true;
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page
      .locator('.composer [role="alert"]')
      .getByText('Not confirmed')
      .waitFor({ timeout: POLL.timeout });
    expect(await storedWithBody(body)).toBe(1);
    await open('south');
    await open('north');
    expect(await draftIn('north')).toBe(body);
    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await expect.poll(() => draftIn('north'), POLL).toBe('');
    const keys = sends.map((f) => f.params?.idempotency_key);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(await storedWithBody(body)).toBe(1);
    // Sent: the draft is gone for good, also after switching.
    await open('south');
    await open('north');
    expect(await draftIn('north')).toBe('');
  });

  it('logged no page error or console error', () => {
    expect(problems).toEqual([]);
  });
});
