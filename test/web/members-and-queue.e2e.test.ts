// Issue 14, second part, in Debian's Chromium against a real `sluice serve`, at both sizes:
// members added and removed from a channel's header (and refused for whom the host refuses), the
// owner adding an agent, queue cards with their attachment mark, the reader's returned reason and
// the agent's presence; every screen scanned by axe-core (no serious or critical violation) and
// walked by keyboard (every control reached, focus visible); a later state of a screen already
// scanned is scanned only where it changed. Screenshots (SLUICE_SCREENSHOTS=1): test-artifacts/web/.

import type { BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { resolveAgent, resolvePrincipal } from '../../src/host/identity/principals.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { beginTurn, endTurn } from '../../src/host/turns/index.js';
import { listActiveMembers } from '../../src/store/ops/channels.js';
import { findPrincipalByName } from '../../src/store/ops/principals.js';
import { seriousViolations } from './axe-scan.js';
import {
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
  type View,
} from './browser-support.js';

const stage = useStage('sluice-web-members-', async (_home, ctx) => {
  for (const view of VIEWPORTS) {
    await seedAs.agent(ctx, `crew-${view.name}`);
    await seedAs.agent(ctx, `worker-${view.name}`, 'turn');
    await seedAs.person(ctx, `pam-${view.name}`);
    await seedAs.person(ctx, `nomad-${view.name}`);
  }
});

function loginLink(person = 'owner'): Promise<string> {
  return loginLinkFor(stage, person);
}

/** A context for a viewport; CSP is bypassed only so axe-core's source can be injected. */
async function openContext(view: View): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await newViewContext(stage.browser, view, { bypassCSP: true });
  const page = await context.newPage();
  const problems: string[] = [];
  collectProblems(page, problems);
  return { context, page, problems };
}

/** One JSON-RPC call from inside the page (its session cookie, same origin). */
async function rpcFromPage(page: Page, method: string, params: unknown) {
  return page.evaluate(
    async ([m, p]) => {
      const res = await fetch('/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: m, params: p }),
      });
      return (await res.json()) as {
        result?: unknown;
        error?: { message: string; data?: { code?: string } };
      };
    },
    [method, params] as const,
  );
}

/**
 * Presses Tab until focus comes back around, and returns what was reached and which of those
 * showed no focus indicator (no outline and no box-shadow). Also lists the visible, enabled
 * controls that Tab never reached.
 */
async function walkByKeyboard(page: Page, within = 'body') {
  // Page-side code is passed as text: the root tsconfig has no DOM types.
  await page.evaluate(
    'document.activeElement && document.activeElement.blur && document.activeElement.blur()',
  );
  const reached: string[] = [];
  const invisible: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    const info = (await page.evaluate(`(() => {
      const el = document.activeElement;
      if (!el || el === document.body) return null;
      if (!el.dataset.walk) el.dataset.walk = String(Math.random()).slice(2);
      const style = getComputedStyle(el);
      const visible = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== 'none';
      const text = (el.textContent || el.getAttribute('aria-label') || el.id || '').trim().slice(0, 30);
      return { id: el.dataset.walk, label: el.tagName.toLowerCase() + ' "' + text + '"', visible };
    })()`)) as { id: string; label: string; visible: boolean } | null;
    if (!info) continue;
    if (seen.has(info.id)) break;
    seen.add(info.id);
    reached.push(info.label);
    if (!info.visible) invisible.push(info.label);
  }
  const missed = (await page.evaluate(`(() => {
    const scope = document.querySelector(${JSON.stringify(within)}) || document.body;
    const controls = scope.querySelectorAll('a[href], button:not([disabled]), select:not([disabled]), input:not([disabled]):not([type="hidden"]), textarea:not([disabled]), [tabindex="0"]');
    return [...controls]
      .filter((el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden')
      .filter((el) => !el.dataset.walk && !(el.type === 'radio' && !el.checked))
      .map((el) => el.tagName.toLowerCase() + ' "' + (el.textContent || el.id || '').trim().slice(0, 30) + '"');
  })()`)) as string[];
  await page.evaluate(
    `document.querySelectorAll('[data-walk]').forEach((el) => el.removeAttribute('data-walk'))`,
  );
  if (process.env.SLUICE_AXE_VERBOSE) console.log(JSON.stringify({ reached, invisible, missed }));
  return { reached, invisible, missed };
}

describe.each(VIEWPORTS)(
  'members, agents, queue marks and accessibility at $name ($width×$height)',
  (view) => {
    const crew = `crew-${view.name}`;
    const worker = `worker-${view.name}`;
    const pam = `pam-${view.name}`;
    const nomad = `nomad-${view.name}`;
    const channel = `ops-${view.name}`;
    const newAgent = `scout-${view.name}`;
    const shot = (page: Page, name: string) => screenshot(page, `${view.name}-${name}`);
    const violations: string[] = [];
    /** axe on the whole page, or with `within` (a selector) on the part that changed. */
    const scan = async (page: Page, screen: string, within?: string) =>
      violations.push(...(await seriousViolations(page, screen, within)));
    let channelId: string;

    beforeAll(async () => {
      const owner = await resolvePrincipal(stage.hostCtx, 'owner');
      const made = await createChannel(stage.hostCtx, owner, { name: channel, members: [crew] });
      channelId = made.id;
    });

    it('the sign-in page and the signed-out notice pass axe', { timeout: 60_000 }, async () => {
      const { context, page } = await openContext(view);
      await page.goto(`${stage.served.origin}/`);
      await page.getByText('You are not signed in').waitFor();
      await scan(page, 'signed-out');
      await shot(page, '21a-signed-out');
      await page.goto(await loginLink());
      await page.getByRole('button', { name: 'Sign in as owner' }).waitFor();
      await scan(page, 'sign-in');
      await shot(page, '21-sign-in');
      await context.close();
      expect(violations).toEqual([]);
    });

    it('the owner adds a member and removes one from the header; the host has the change', {
      timeout: 120_000,
    }, async () => {
      const { context, page, problems } = await openContext(view);
      await signIn(page, await loginLink());
      // The home screen once its list is in: scanned and walked before, it could have 3 controls.
      await page
        .getByRole('navigation')
        .getByRole('link', { name: `#${channel}`, exact: true })
        .waitFor();
      await page.getByText('Loading channels…').waitFor({ state: 'detached' });
      await scan(page, 'home');
      const keys = await walkByKeyboard(page);
      expect(keys.reached.length).toBeGreaterThan(4);
      expect(keys.invisible, 'focus must be visible').toEqual([]);
      expect(keys.missed, 'every control reachable by Tab').toEqual([]);

      await page.goto(`${stage.served.origin}/#/channel/${channelId}`);
      const open = page.getByRole('button', { name: /^Members of #ops-.* \(2\)$/ });
      await open.waitFor();
      await scan(page, 'channel');
      const onChannel = await walkByKeyboard(page);
      expect(onChannel.invisible, 'focus must be visible').toEqual([]);
      expect(onChannel.missed, 'every control reachable by Tab').toEqual([]);
      await open.click();
      const dialog = page.getByRole('dialog', { name: `Members of #${channel}` });
      await dialog.waitFor();
      await dialog.getByText(crew).waitFor();
      await dialog.locator('#member-add-name').selectOption(pam);
      await dialog.getByRole('button', { name: 'Add', exact: true }).click();
      await dialog.getByText(`${pam} added.`).waitFor();
      const names = async () =>
        (await listActiveMembers(stage.hostCtx.store.db, channelId)).map((m) => m.name);
      expect(await names()).toEqual([crew, 'owner', pam]);
      await scan(page, 'members-dialog');
      const inDialog = await walkByKeyboard(page, 'dialog');
      expect(inDialog.reached.length).toBeGreaterThan(3);
      expect(inDialog.invisible).toEqual([]);
      expect(inDialog.missed).toEqual([]);
      await shot(page, '22-members');

      await dialog.getByRole('button', { name: `Remove ${crew}` }).click();
      await dialog.getByRole('button', { name: `Yes, remove ${crew}` }).click();
      await dialog.getByText(`${crew} removed.`).waitFor();
      expect(await names()).toEqual(['owner', pam]);
      // Put the agent back for the next tests.
      await dialog.locator('#member-add-name').selectOption(crew);
      await dialog.getByRole('button', { name: 'Add', exact: true }).click();
      await dialog.getByText(`${crew} added.`).waitFor();
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      expect(problems).toEqual([]);
      await context.close();
      expect(violations).toEqual([]);
    });

    it('a member who is not the creator is refused a removal, a non-member anything, and nothing changes', {
      timeout: 120_000,
    }, async () => {
      const before = (await listActiveMembers(stage.hostCtx.store.db, channelId)).map((m) => m.name);
      expect(before).toContain(pam);
      const { context, page } = await openContext(view);
      await signIn(page, await loginLink(pam), pam);
      await page.goto(`${stage.served.origin}/#/channel/${channelId}`);
      await page.getByRole('button', { name: /^Members of/ }).click();
      const dialog = page.getByRole('dialog', { name: `Members of #${channel}` });
      await dialog.getByRole('button', { name: `Remove ${crew}` }).click();
      await dialog.getByRole('button', { name: `Yes, remove ${crew}` }).click();
      await dialog
        .getByRole('alert')
        .getByText(`${crew} not removed: only the creator of #${channel} may remove others`)
        .waitFor();
      // Nor may pam add an agent she does not manage: one line in the dialog, nothing changes.
      await dialog.locator('#member-add-name').selectOption(worker);
      await dialog.getByRole('button', { name: 'Add', exact: true }).click();
      await dialog
        .getByRole('alert')
        .getByText(`${worker} not added: only the owner or a manager of ${worker} may add it to a channel`, {
          exact: false,
        })
        .waitFor();
      await scan(page, 'members-refused', 'dialog');
      await shot(page, '23-members-refused');
      // pam is not the owner: no "New agent", and the host refuses the call anyway.
      await page.keyboard.press('Escape');
      const denied = await rpcFromPage(page, 'principal.addAgent', { name: `sneak-${view.name}` });
      expect(denied.error?.message).toMatch(/only the owner may add an agent/);
      expect(await findPrincipalByName(stage.hostCtx.store.db, `sneak-${view.name}`)).toBeUndefined();
      // pam shares the channel with crew but does not manage it: the queue has no Pause button,
      // and the host refuses the call anyway (docs/security.md).
      await page.goto(`${stage.served.origin}/#/queue/${crew}`);
      await page.getByTestId('queue-total').waitFor();
      expect(await page.getByRole('button', { name: 'Pause queue' }).count()).toBe(0);
      const pause = await rpcFromPage(page, 'queue.pause', { agent: crew });
      expect(pause.error?.data?.code).toBe('denied');
      await context.close();

      // nomad is in no channel: the page says the channel is not theirs, and the host refuses both.
      const other = await openContext(view);
      await signIn(other.page, await loginLink(nomad), nomad);
      await other.page.goto(`${stage.served.origin}/#/channel/${channelId}`);
      await other.page.getByText('That channel is not one of yours').waitFor();
      await scan(other.page, 'channel-not-yours', 'main.pane');
      await shot(other.page, '28-channel-not-yours');
      const add = await rpcFromPage(other.page, 'channel.addMember', { channelId, member: nomad });
      expect(add.error?.message).toMatch(/not a member/);
      const remove = await rpcFromPage(other.page, 'channel.removeMember', { channelId, member: crew });
      expect(remove.error?.message).toMatch(/not a member/);
      await other.context.close();
      expect((await listActiveMembers(stage.hostCtx.store.db, channelId)).map((m) => m.name)).toEqual(before);
      expect(violations).toEqual([]);
    });

    it('the owner adds an agent (name, settlement) from New message and writes to it', {
      timeout: 120_000,
    }, async () => {
      const { context, page, problems } = await openContext(view);
      await signIn(page, await loginLink());
      if (view.isMobile) await page.goto(`${stage.served.origin}/#/`);
      await page.getByRole('button', { name: 'New message' }).click();
      const dialog = page.getByRole('dialog', { name: 'New message' });
      await dialog.getByRole('button', { name: 'New agent…' }).click();
      await dialog.getByLabel('Agent name').fill(newAgent);
      await dialog.getByRole('radio', { name: /^turn/ }).check();
      await scan(page, 'new-agent', 'dialog');
      await shot(page, '24-new-agent');
      await dialog.getByRole('button', { name: 'Add agent' }).click();
      await expect.poll(() => dialog.locator('#new-message-to').inputValue(), POLL).toBe(newAgent);
      const added = await findPrincipalByName(stage.hostCtx.store.db, newAgent);
      expect(added).toMatchObject({ kind: 'agent', settlement: 'turn' });
      // A taken name: one line, nothing added.
      await dialog.getByRole('button', { name: 'New agent…' }).click();
      await dialog.getByLabel('Agent name').fill(crew);
      await dialog.getByRole('button', { name: 'Add agent' }).click();
      await dialog
        .getByRole('alert')
        .getByText(`not added: a principal named ${crew} already exists`)
        .waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).last().click();
      await dialog.getByLabel('Message').fill('welcome aboard');
      await dialog.getByRole('button', { name: 'Send' }).click();
      await page.waitForURL((u) => u.hash.startsWith('#/channel/'));
      await page.getByText('welcome aboard').waitFor();
      expect(problems).toEqual([]);
      await context.close();
      expect(violations).toEqual([]);
    });

    it('queue cards carry an attachment mark, the reader says why a card was returned, the header the presence', {
      timeout: 120_000,
    }, async () => {
      const owner = await resolvePrincipal(stage.hostCtx, 'owner');
      const jobs = `jobs2-${view.name}`;
      await createChannel(stage.hostCtx, owner, { name: jobs, members: [worker] });
      const files = [
        await putMedia(stage.hostCtx, owner, new TextEncoder().encode('alpha'), 'a.txt'),
        await putMedia(stage.hostCtx, owner, new TextEncoder().encode('beta'), 'b.txt'),
      ];
      await sendMessage(stage.hostCtx, owner, {
        to: `#${jobs}`,
        body: 'two files to check',
        attachmentIds: files.map((f) => f.attachment_id),
      });
      await failTurnOver(stage.hostCtx, worker);
      const agent = await resolveAgent(stage.hostCtx, worker);
      await sendMessage(stage.hostCtx, owner, { to: `#${jobs}`, body: 'plain follow-up' });

      const { context, page, problems } = await openContext(view);
      await signIn(page, await loginLink());
      await page.goto(`${stage.served.origin}/#/queue/${worker}`);
      await expect.poll(() => page.locator('.card').count(), { ...POLL, timeout: 60_000 }).toBe(2);
      const withFiles = page.locator('.card', { hasText: 'two files to check' });
      expect((await withFiles.locator('.card-attachments').textContent())?.replace(/\s+/g, ' ').trim()).toBe(
        '2 files',
      );
      expect(
        await page.locator('.card', { hasText: 'plain follow-up' }).locator('.card-attachments').count(),
      ).toBe(0);
      const presence = page.getByTestId('presence');
      await expect
        .poll(() => presence.textContent(), POLL)
        .toMatch(/idle · its last turn failed · last activity/);
      await scan(page, 'queue');
      const onQueue = await walkByKeyboard(page);
      expect(onQueue.invisible, 'focus must be visible').toEqual([]);
      expect(onQueue.missed, 'every control reachable by Tab').toEqual([]);
      await shot(page, '25-queue-marks');

      await withFiles.click();
      const reader = page.getByRole('dialog');
      await reader.getByTestId('returned-reason').getByText('the model server answered 529').waitFor();
      await reader.getByTestId('reader-body').waitFor();
      await scan(page, 'card-reader', 'dialog');
      await shot(page, '26-returned-reason');
      await reader.getByRole('button', { name: 'Close' }).click();

      // A driver's turn starts (no queue change, so nothing is pushed): the page looks again when
      // it comes back into view.
      const driven = await beginTurn(stage.hostCtx, agent, { receipt: 'seen' });
      await page.evaluate("document.dispatchEvent(new Event('visibilitychange'))");
      await expect.poll(() => presence.textContent(), POLL).toMatch(/being driven/);
      // It ends; the next queue change brings the new presence with it.
      await endTurn(stage.hostCtx, agent, driven.id, { ok: true });
      await sendMessage(stage.hostCtx, owner, { to: `#${jobs}`, body: 'one more' });
      await expect.poll(() => presence.textContent(), POLL).toMatch(/idle · its last turn finished/);

      // Errors: an unknown agent's queue.
      await page.goto(`${stage.served.origin}/#/queue/nobody-${view.name}`);
      await page.getByRole('alert').getByText(`There is no agent called nobody-${view.name}`).waitFor();
      await scan(page, 'queue-unknown', 'main.pane');
      await shot(page, '27-queue-unknown');
      expect(problems).toEqual([]);
      await context.close();
      expect(violations).toEqual([]);
    });
  },
);
