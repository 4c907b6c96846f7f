// Issue 14 read-back, in Debian's Chromium against a real `sluice serve`: the Members dialog lists
// every member of a 260-member channel (walking `channel.members`, never re-listing the channels),
// "New agent" shows only when the host's hello says `canAddAgent`, and a channel created while the
// sidebar's first load is under way appears without a reload. The WebSocket between the
// page and the host is routed (`routeWebSocket`) to count frames and, for the sidebar, to hold the
// first `channel.list` reply until the new channel's `channel.joined` has reached the page.

import type { Page, WebSocketRoute } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { addMember, createChannel } from '../../src/host/channels/channels.js';
import { addPrincipal, resolvePrincipal } from '../../src/host/identity/principals.js';
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

const MEMBERS = 260;
const BULK_CHANNELS = 60;

const stage = useStage('sluice-web-paging-', async () => {});

beforeAll(async () => {
  const ctx = stage.hostCtx;
  const owner = await resolvePrincipal(ctx, 'owner');
  await addPrincipal(ctx, { name: 'pam', kind: 'person' });
  // Before #crowd: the sidebar's first page holds the most recent 30 (issue 28), #crowd among them.
  for (let i = 0; i < BULK_CHANNELS; i++)
    await createChannel(ctx, owner, { name: `bulk-${String(i).padStart(2, '0')}`, members: [] });
  const crowd = await createChannel(ctx, owner, { name: 'crowd', members: [] });
  for (let i = 0; i < MEMBERS - 1; i++) {
    const name = `member-${String(i).padStart(3, '0')}`;
    await addPrincipal(ctx, { name, kind: i % 2 === 0 ? 'agent' : 'person' });
    await addMember(ctx, owner, crowd.id, name);
  }
}, 300_000);

interface Frame {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
}

/** Passes every frame through and notes what the page asked for, in order. */
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

describe.each(VIEWPORTS)('the Members dialog at $name ($width×$height)', (view) => {
  it(`lists all ${MEMBERS} members page by page and does not re-list the channels`, {
    timeout: 120_000,
  }, async () => {
    const context = await newViewContext(stage.browser, view);
    const page = await context.newPage();
    const problems: string[] = [];
    collectProblems(page, problems);
    const sent = await countFrames(page);
    await signIn(page, await loginLinkFor(stage));
    await page.getByRole('navigation').getByRole('link', { name: '#crowd', exact: true }).click();
    const open = page.getByRole('button', { name: `Members of #crowd (${MEMBERS})` });
    await open.waitFor();
    const listsBefore = sent.filter((f) => f.method === 'channel.list').length;
    await open.click();
    const dialog = page.getByRole('dialog', { name: 'Members of #crowd' });
    const rows = dialog.getByRole('list', { name: 'Members' }).getByRole('listitem');
    await expect.poll(() => rows.count(), POLL).toBe(MEMBERS);
    await dialog.getByTestId('members-loading').waitFor({ state: 'detached' });
    // The last member by name comes from the second page; the Add picker offers nobody already in.
    await rows.filter({ hasText: 'member-258' }).waitFor();
    const offered = await dialog.locator('#member-add-name option').allTextContents();
    expect(offered.filter((text) => text.startsWith('member-'))).toEqual([]);
    expect(offered).toContain('pam (person)');
    const pages = sent.filter((f) => f.method === 'channel.members');
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.filter((f) => f.params?.cursor !== undefined).length).toBe(pages.length - 1);
    expect(sent.filter((f) => f.method === 'channel.list').length).toBe(listsBefore);
    await screenshot(page, `${view.name}-40-all-members`);
    expect(problems).toEqual([]);
    await context.close();
  });
});

describe('"New agent" follows the host\'s canAddAgent', () => {
  const view = VIEWPORTS[0];
  async function newAgentButtons(person: string, hideField = false): Promise<number> {
    const context = await newViewContext(stage.browser, view);
    const page = await context.newPage();
    if (hideField)
      // An older host: its hello has no canAddAgent (the page checks the session over HTTP POST).
      await page.route('**/rpc', async (route) => {
        const request = route.request();
        if (request.method() !== 'POST' || !request.postData()?.includes('"host.hello"'))
          return route.continue();
        const response = await route.fetch();
        const body = (await response.json()) as { result?: Record<string, unknown> };
        if (body.result) delete body.result.canAddAgent;
        await route.fulfill({ response, json: body });
      });
    await signIn(page, await loginLinkFor(stage, person), person);
    await page.getByRole('button', { name: 'New message' }).click();
    const dialog = page.getByRole('dialog', { name: 'New message' });
    await dialog.getByLabel('To').waitFor();
    const count = await dialog.getByRole('button', { name: 'New agent…' }).count();
    await context.close();
    return count;
  }

  it('shows it to the owner, whose hello says true', async () => {
    expect(await newAgentButtons('owner')).toBe(1);
  }, 60_000);

  it('hides it from a person, whose hello says false', async () => {
    expect(await newAgentButtons('pam', false)).toBe(0);
  }, 60_000);

  it('hides it from the owner when the host does not say (an older host)', async () => {
    expect(await newAgentButtons('owner', true)).toBe(0);
  }, 60_000);
});

describe('a channel created while the first channel.list page is on its way', () => {
  it('appears in the sidebar without a reload', { timeout: 120_000 }, async () => {
    const context = await newViewContext(stage.browser, VIEWPORTS[0]);
    const page = await context.newPage();
    const problems: string[] = [];
    collectProblems(page, problems);
    const sent: Frame[] = [];
    let firstListId: number | null = null;
    let subscribeId: number | null = null;
    let subscribed = false;
    let joinedForwarded = false;
    let held: { ws: WebSocketRoute; text: string } | null = null;
    await page.routeWebSocket(/\/rpc$/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((text) => {
        const frame = JSON.parse(String(text)) as Frame;
        sent.push(frame);
        if (frame.method === 'channel.list' && frame.params?.cursor === undefined && firstListId === null)
          firstListId = frame.id ?? null;
        if (frame.method === 'subscribe' && frame.params?.channelList === true)
          subscribeId = frame.id ?? null;
        server.send(text);
      });
      server.onMessage((text) => {
        const frame = JSON.parse(String(text)) as Frame & { params?: { channel?: { name?: string } } };
        if (frame.id !== undefined && frame.id === firstListId && held === null) {
          // The first page of the list stays with us until the new channel's event is through.
          held = { ws, text: String(text) };
          return;
        }
        if (frame.id !== undefined && frame.id === subscribeId) subscribed = true;
        ws.send(text);
        if (frame.method === 'channel.joined' && frame.params?.channel?.name === 'aaa-late')
          joinedForwarded = true;
      });
    });
    await signIn(page, await loginLinkFor(stage));
    await expect.poll(() => held !== null && subscribed, POLL).toBe(true);
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    // Named to sort first: it is on no page the load has yet to read.
    await createChannel(stage.hostCtx, owner, { name: 'aaa-late', members: [] });
    await expect.poll(() => joinedForwarded, POLL).toBe(true);
    const release = held as { ws: WebSocketRoute; text: string } | null;
    release?.ws.send(release.text);
    const nav = page.getByRole('navigation');
    await nav.getByRole('link', { name: '#bulk-59', exact: true }).waitFor();
    await nav.getByRole('link', { name: '#aaa-late', exact: true }).waitFor({ timeout: POLL.timeout });
    // One page, most recent first (issue 28): no page after it, and the new channel on top.
    expect(sent.filter((f) => f.method === 'channel.list').length).toBe(1);
    await expect
      .poll(() => nav.locator('.sidebar-channels .nav-label').first().textContent(), POLL)
      .toBe('#aaa-late');
    await screenshot(page, 'desktop-41-created-during-load');
    expect(problems).toEqual([]);
    await context.close();
  });
});

describe('after an add, the Members dialog announces the change with the list that has it', () => {
  // CI once walked the dialog by keyboard right after "… added." and reached only Close: the note
  // came before the reload of the list, while every other control was still disabled.
  it('shows "added." only once the new member is listed and the controls are usable', {
    timeout: 120_000,
  }, async () => {
    const ctx = stage.hostCtx;
    const owner = await resolvePrincipal(ctx, 'owner');
    await addPrincipal(ctx, { name: 'helper', kind: 'agent' });
    await createChannel(ctx, owner, { name: 'small', members: [] });
    const context = await newViewContext(stage.browser, VIEWPORTS[0]);
    const page = await context.newPage();
    const problems: string[] = [];
    collectProblems(page, problems);
    let addId: number | null = null;
    let reloadId: number | null = null;
    let held: { ws: WebSocketRoute; text: string } | null = null;
    await page.routeWebSocket(/\/rpc$/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((text) => {
        const frame = JSON.parse(String(text)) as Frame;
        if (frame.method === 'channel.addMember') addId = frame.id ?? null;
        // The first listing after the add is the reload.
        else if (frame.method === 'channel.members' && addId !== null && reloadId === null)
          reloadId = frame.id ?? null;
        server.send(text);
      });
      server.onMessage((text) => {
        const frame = JSON.parse(String(text)) as Frame;
        if (frame.id !== undefined && frame.id === reloadId && held === null) {
          held = { ws, text: String(text) };
          return;
        }
        ws.send(text);
      });
    });
    await signIn(page, await loginLinkFor(stage));
    await page.getByRole('navigation').getByRole('link', { name: '#small', exact: true }).click();
    await page.getByRole('button', { name: 'Members of #small (1)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Members of #small' });
    await dialog.locator('#member-add-name').selectOption('helper');
    await dialog.getByRole('button', { name: 'Add', exact: true }).click();
    // The reload is on its way and its answer held: the dialog says it is loading, and no more.
    await expect.poll(() => held !== null, POLL).toBe(true);
    await dialog.getByTestId('members-loading').waitFor();
    expect(await dialog.getByRole('status').textContent()).toBe('');
    const release = held as { ws: WebSocketRoute; text: string } | null;
    release?.ws.send(release.text);
    await dialog.getByText('helper added.').waitFor();
    // In the same render as the note: the row, and a Remove that works.
    const rows = dialog.getByRole('list', { name: 'Members' }).getByRole('listitem');
    expect(await rows.filter({ hasText: 'helper' }).count()).toBe(1);
    expect(await dialog.getByRole('button', { name: 'Remove helper' }).isEnabled()).toBe(true);
    expect(problems).toEqual([]);
    await context.close();
  });
});
