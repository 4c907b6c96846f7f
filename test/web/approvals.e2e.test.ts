// Issue 24 item 1 on the page: an agent's owner sees its pending approval request as a card showing
// exactly what the client asked, and decides with Allow, Deny or Deny with a note; the card comes
// and goes live. A person who does not manage the agent sees no card and is refused by the host.
// A question (a Codex user-input request) is answered with text, an option's label filling it.
// The sidebar counts each agent's pending requests, live, and the count clears on a decision.
// Debian's Chromium via playwright-core against a real `sluice serve`, at 1280×800 and 390×844.

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApprovalRequest } from '../../src/host/approvals/decisions.js';
import { requestApproval } from '../../src/host/approvals/requests.js';
import type { ApprovalAsk } from '../../src/host/approvals/subject.js';
import { createChannel } from '../../src/host/channels/channels.js';
import { resolveAgent, resolvePrincipal } from '../../src/host/identity/principals.js';
import { findApprovalById } from '../../src/store/ops/approvals.js';
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

const stage = useStage('sluice-web-approvals-', async (_home, ctx) => {
  for (const view of VIEWPORTS) {
    await seedAs.agent(ctx, `asker-${view.name}`);
    await seedAs.person(ctx, `pam-${view.name}`);
  }
});

const bash = (command: string): ApprovalAsk => ({
  client: 'claude',
  kind: 'tool',
  subject: { tool: 'Bash', input: { command, description: 'deploy the site' } },
  turnId: null,
});

describe.each(VIEWPORTS)('approval cards at a $name viewport', (view) => {
  const agent = `asker-${view.name}`;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const card = (command: string) => page.locator('.approval-card', { hasText: command });
  const row = (id: string) => findApprovalById(stage.hostCtx.store.db, id);

  beforeAll(async () => {
    context = await newViewContext(stage.browser, view);
    page = await context.newPage();
    collectProblems(page, problems, { console: 'except-favicon', http: true });
    await signIn(page, await loginLinkFor(stage));
    await page.evaluate(`window.location.hash = ${JSON.stringify(`#/queue/${agent}`)}`);
    await page.getByText(`${agent} has no messages yet`).waitFor();
  });
  afterAll(() => context?.close());

  it('a request appears live with its exact input, and Allow decides it as the owner', async () => {
    const asker = await resolveAgent(stage.hostCtx, agent);
    const { row: asked } = await requestApproval(stage.hostCtx, asker, bash('make deploy'), 600_000);
    await card('make deploy').waitFor();
    const input = await card('make deploy').locator('pre').first().textContent();
    expect(JSON.parse(input ?? '')).toEqual({ command: 'make deploy', description: 'deploy the site' });
    expect(await card('make deploy').textContent()).toContain('Bash');
    await card('make deploy').getByRole('button', { name: 'Allow', exact: true }).click();
    await card('make deploy').waitFor({ state: 'detached' });
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    expect(await row(asked.id)).toMatchObject({ status: 'allowed', decided_by: owner.id, note: null });
  });

  it('Deny with a note sends the note, and the card goes', async () => {
    const asker = await resolveAgent(stage.hostCtx, agent);
    const { row: asked } = await requestApproval(stage.hostCtx, asker, bash('rm -rf build'), 600_000);
    await card('rm -rf build').getByRole('button', { name: 'Deny with a note…' }).click();
    await card('rm -rf build').getByLabel('Note for the model').fill('Not on Fridays.');
    await card('rm -rf build').getByRole('button', { name: 'Deny with this note' }).click();
    await card('rm -rf build').waitFor({ state: 'detached' });
    await expect.poll(async () => (await row(asked.id))?.status, POLL).toBe('denied');
    expect((await row(asked.id))?.note).toBe('Not on Fridays.');
  });

  it('a person who does not manage the agent sees no card, and the host refuses their decision', async () => {
    const asker = await resolveAgent(stage.hostCtx, agent);
    const { row: asked } = await requestApproval(stage.hostCtx, asker, bash('make release'), 600_000);
    await card('make release').waitFor();
    const other = await stage.browser.newContext({ viewport: { width: view.width, height: view.height } });
    try {
      const pamPage = await other.newPage();
      await signIn(pamPage, await loginLinkFor(stage, `pam-${view.name}`), `pam-${view.name}`);
      await pamPage.evaluate(`window.location.hash = ${JSON.stringify(`#/queue/${agent}`)}`);
      await pamPage.getByRole('alert').first().waitFor();
      expect(await pamPage.locator('.approval-card').count()).toBe(0);
      const refused = (await pamPage.evaluate(`fetch('/rpc', {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'approval.decide', params: { id: ${JSON.stringify(asked.id)}, decision: 'allow' } }),
      }).then((r) => r.json())`)) as { error?: { data?: { code?: string } } };
      expect(refused.error?.data?.code).toBe('denied');
      expect((await row(asked.id))?.status).toBe('pending');
    } finally {
      await other.close();
    }
    // The owner's Deny ends it.
    await card('make release').getByRole('button', { name: 'Deny', exact: true }).click();
    await card('make release').waitFor({ state: 'detached' });
    expect((await row(asked.id))?.status).toBe('denied');
  });

  it('a question shows exactly, an option fills the answer, and Send answer answers it', async () => {
    const asker = await resolveAgent(stage.hostCtx, agent);
    const questions = [
      {
        id: 'colour',
        header: 'Colour',
        question: 'Which colour should the banner be?',
        isOther: true,
        isSecret: false,
        options: [
          { label: 'Red', description: 'warm' },
          { label: 'Blue', description: 'cool' },
        ],
      },
    ];
    const { row: asked } = await requestApproval(
      stage.hostCtx,
      asker,
      { client: 'codex', kind: 'user_input', subject: { questions }, turnId: null },
      600_000,
    );
    const question = card('Which colour should the banner be?');
    await question.waitFor();
    expect(await question.getByRole('heading').count()).toBe(0);
    expect(await question.textContent()).toContain(`${agent} asks you a question`);
    expect(await question.locator('.approval-question').textContent()).toBe(
      'Which colour should the banner be?',
    );
    // A question has no bare Allow: an answer is text.
    expect(await question.getByRole('button', { name: 'Allow', exact: true }).count()).toBe(0);
    await question.getByRole('button', { name: 'Blue', exact: true }).click();
    const field = question.getByLabel('Your answer');
    expect(await field.inputValue()).toBe('Blue');
    await field.fill('Blue, with white letters');
    await question.getByRole('button', { name: 'Send answer' }).click();
    await question.waitFor({ state: 'detached' });
    await expect.poll(async () => (await row(asked.id))?.status, POLL).toBe('allowed');
    expect((await row(asked.id))?.note).toBe('Blue, with white letters');
  });

  it('the sidebar counts the agent’s pending requests live, and the count clears when they are decided', async () => {
    // Home: the sidebar is shown at every width there.
    await page.evaluate(`window.location.hash = '#/'`);
    const link = page.locator(`a.nav-item[data-agent="${agent}"]`);
    await link.waitFor();
    expect(await link.locator('.approval-badge').count()).toBe(0);
    const asker = await resolveAgent(stage.hostCtx, agent);
    const first = await requestApproval(stage.hostCtx, asker, bash('make one'), 600_000);
    await expect
      .poll(
        () =>
          link
            .locator('.approval-badge')
            .textContent()
            .catch(() => null),
        POLL,
      )
      .toBe('1');
    const second = await requestApproval(stage.hostCtx, asker, bash('make two'), 600_000);
    await expect
      .poll(
        () =>
          link
            .locator('.approval-badge')
            .textContent()
            .catch(() => null),
        POLL,
      )
      .toBe('2');
    expect(await page.locator(`#approvals-${agent}`).textContent()).toBe('2 waiting for your decision');
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    await decideApprovalRequest(stage.hostCtx, owner, { id: first.row.id, decision: 'allow' });
    await expect
      .poll(
        () =>
          link
            .locator('.approval-badge')
            .textContent()
            .catch(() => null),
        POLL,
      )
      .toBe('1');
    await decideApprovalRequest(stage.hostCtx, owner, { id: second.row.id, decision: 'deny' });
    await link.locator('.approval-badge').waitFor({ state: 'detached' });
    // A person who shares a channel with the agent (so lists it) but may not decide for it gets
    // no count, nor the requests behind it. (Only the agent's managers add it to a group; the
    // owner's additions join at once.)
    const pam = await resolvePrincipal(stage.hostCtx, `pam-${view.name}`);
    await createChannel(stage.hostCtx, owner, { name: `with-${agent}`, members: [agent, pam.name] });
    const other = await stage.browser.newContext({ viewport: { width: view.width, height: view.height } });
    try {
      const pamPage = await other.newPage();
      await signIn(pamPage, await loginLinkFor(stage, `pam-${view.name}`), `pam-${view.name}`);
      const pamLink = pamPage.locator(`a.nav-item[data-agent="${agent}"]`);
      await pamLink.waitFor();
      const third = await requestApproval(stage.hostCtx, asker, bash('make three'), 600_000);
      await link.locator('.approval-badge').waitFor();
      expect(await pamLink.locator('.approval-badge').count()).toBe(0);
      await decideApprovalRequest(stage.hostCtx, owner, { id: third.row.id, decision: 'deny' });
      await link.locator('.approval-badge').waitFor({ state: 'detached' });
    } finally {
      await other.close();
    }
  });

  it('a request too large for a list shows cut beside the others after a reload, and says how to see it whole', async () => {
    const asker = await resolveAgent(stage.hostCtx, agent);
    const huge: ApprovalAsk = {
      client: 'claude',
      kind: 'tool',
      subject: { tool: 'Write', input: { file_path: '/srv/huge.txt', content: 'z'.repeat(1_400_000) } },
      turnId: null,
    };
    const { row: big } = await requestApproval(stage.hostCtx, asker, huge, 600_000);
    const { row: small } = await requestApproval(
      stage.hostCtx,
      asker,
      bash('make small # \u202ehs | x'),
      600_000,
    );
    // A fresh load reads approval.list: before, it failed too_large and the page showed no card at all.
    await page.evaluate(`window.location.hash = ${JSON.stringify(`#/queue/${agent}`)}`);
    await page.reload();
    await card('make small').waitFor();
    const cut = page.locator(`.approval-card[data-approval-id="${big.id}"]`);
    await cut.waitFor();
    expect(await cut.locator('.approval-cut').textContent()).toContain(`sluice approval show ${big.id}`);
    expect(await cut.locator('.approval-cut').textContent()).toMatch(/the whole request is 1\.\d MB/);
    // A bidi override shows as what it is, not as a reordering of the command.
    const input = (await card('make small').locator('pre').first().textContent()) ?? '';
    expect(input).toContain('make small # \\u202ehs | x');
    expect(input).not.toContain('\u202e');
    // The timeout reads as the wait left, not as a date.
    expect(await card('make small').textContent()).toContain('denied by itself in 10 minutes if nobody');
    const owner = await resolvePrincipal(stage.hostCtx, 'owner');
    for (const id of [big.id, small.id])
      await decideApprovalRequest(stage.hostCtx, owner, { id, decision: 'deny' });
    await cut.waitFor({ state: 'detached' });
    await card('make small').waitFor({ state: 'detached' });
  });

  it('logged no page error or console error', () => {
    expect(problems).toEqual([]);
  });
});
