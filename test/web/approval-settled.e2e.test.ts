// Two people decide the same approval request at once: the one who lost sees who decided it and
// how ("Denied by alice") and their own attempt's `conflict`, and dismisses the card themselves;
// it does not vanish under their click. A request whose time ran out with no driver left to deny
// it shows as expired, with nothing to press but Dismiss. The owner's WebSocket is routed
// (`routeWebSocket`) so that alice's decision reaches the page just after the owner pressed Allow,
// before the host's answer to it: the order of a real race. A request decided while the page was
// disconnected (its push dropped, then the socket closed) stays as decided after the reconnect's
// re-read instead of vanishing. Debian's Chromium via playwright-core against a real `sluice serve`.

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApprovalRequest } from '../../src/host/approvals/decisions.js';
import { requestApproval } from '../../src/host/approvals/requests.js';
import type { ApprovalAsk } from '../../src/host/approvals/subject.js';
import { resolveAgent, resolvePrincipal } from '../../src/host/identity/principals.js';
import { findApprovalById } from '../../src/store/ops/approvals.js';
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

const stage = useStage('sluice-web-approval-settled-', async (_home, ctx) => {
  await seedAs.agent(ctx, 'asker');
  await seedAs.person(ctx, 'alice');
  await seedAs.manager(ctx, 'asker', 'alice');
});

const bash = (command: string): ApprovalAsk => ({
  client: 'claude',
  kind: 'tool',
  subject: { tool: 'Bash', input: { command } },
  turnId: null,
});

interface Frame {
  id?: number;
  method?: string;
  params?: { approval?: { status?: string } };
}

describe('an approval card decided elsewhere while its person acts on it', () => {
  const view = VIEWPORTS[0];
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const card = (command: string) => page.locator('.approval-card', { hasText: command });
  /** Decisions pushed to the page, held until the page sends its own decision. */
  const held: string[] = [];
  let holding = true;
  /** While set, decisions pushed to the page are lost, as over a connection that is going down. */
  let dropping = false;
  const dropped: string[] = [];
  /** Closes the page's current socket (and its leg to the host): the page reconnects on its own. */
  let disconnect: () => Promise<void> = async () => {};

  beforeAll(async () => {
    context = await newViewContext(stage.browser, view, { bypassCSP: true });
    page = await context.newPage();
    collectProblems(page, problems, { console: 'except-favicon', http: true });
    await page.routeWebSocket(/\/rpc$/, (ws) => {
      const server = ws.connectToServer();
      disconnect = async () => {
        await ws.close();
        await server.close();
      };
      ws.onMessage((text) => {
        const frame = JSON.parse(String(text)) as Frame;
        if (frame.method === 'approval.decide' && holding) {
          // The other person's decision arrives first, then the host answers this one.
          holding = false;
          for (const push of held.splice(0)) ws.send(push);
        }
        server.send(text);
      });
      server.onMessage((text) => {
        const frame = JSON.parse(String(text)) as Frame;
        if (dropping && frame.method === 'approval.changed' && frame.params?.approval?.status !== 'pending')
          dropped.push(String(text));
        else if (
          holding &&
          frame.method === 'approval.changed' &&
          frame.params?.approval?.status !== 'pending'
        )
          held.push(String(text));
        else ws.send(text);
      });
    });
    await signIn(page, await loginLinkFor(stage));
    await page.evaluate(`window.location.hash = '#/queue/asker'`);
    await page.getByText('asker has no messages yet').waitFor();
  });
  afterAll(() => context?.close());

  it('the loser sees "Denied by alice" and their conflict, and dismisses the card', async () => {
    const asker = await resolveAgent(stage.hostCtx, 'asker');
    const { row } = await requestApproval(stage.hostCtx, asker, bash('make deploy'), 600_000);
    await card('make deploy').waitFor();
    const alice = await resolvePrincipal(stage.hostCtx, 'alice');
    await decideApprovalRequest(stage.hostCtx, alice, { id: row.id, decision: 'deny' });
    await expect.poll(() => held.length, POLL).toBe(1);
    await card('make deploy').getByRole('button', { name: 'Allow', exact: true }).click();
    const settled = card('make deploy');
    await settled.getByText('Denied by alice').waitFor({ timeout: POLL.timeout });
    await settled.getByRole('alert').getByText('(conflict)').waitFor({ timeout: POLL.timeout });
    expect(await settled.getByRole('button', { name: 'Allow', exact: true }).count()).toBe(0);
    expect((await findApprovalById(stage.hostCtx.store.db, row.id))?.status).toBe('denied');
    expect(await seriousViolations(page, 'approval-settled', '.approval-card')).toEqual([]);
    // Dismissed from the keyboard.
    await settled.getByRole('button', { name: 'Dismiss' }).focus();
    await page.keyboard.press('Enter');
    await settled.waitFor({ state: 'detached' });
  });

  it('a request whose time ran out with no driver shows as expired, not as a question', async () => {
    const asker = await resolveAgent(stage.hostCtx, 'asker');
    await requestApproval(stage.hostCtx, asker, bash('make expire'), 1_500);
    const expired = card('make expire');
    await expired.getByText('Expired').waitFor({ timeout: POLL.timeout });
    expect(await expired.getByRole('button', { name: 'Allow', exact: true }).count()).toBe(0);
    expect(await expired.getByRole('button', { name: 'Deny', exact: true }).count()).toBe(0);
    // Nor does the sidebar count it as waiting for a decision.
    await page
      .locator('a.nav-item[data-agent="asker"] .approval-badge')
      .waitFor({ state: 'detached', timeout: POLL.timeout });
    await expired.getByRole('button', { name: 'Dismiss' }).click();
    await expired.waitFor({ state: 'detached' });
  });

  it('a request decided while the page was disconnected stays, as decided, after the reconnect', async () => {
    const asker = await resolveAgent(stage.hostCtx, 'asker');
    const { row } = await requestApproval(stage.hostCtx, asker, bash('make offline'), 600_000);
    await card('make offline').waitFor();
    dropping = true;
    const alice = await resolvePrincipal(stage.hostCtx, 'alice');
    await decideApprovalRequest(stage.hostCtx, alice, { id: row.id, decision: 'deny', note: 'not now' });
    await expect.poll(() => dropped.length, POLL).toBe(1);
    dropping = false;
    await disconnect();
    // The reconnect re-reads the pending requests: this one is no longer among them.
    const settled = card('make offline');
    await settled.getByText('Denied by alice').waitFor({ timeout: POLL.timeout });
    await settled.getByText('not now').waitFor();
    expect(await settled.getByRole('button', { name: 'Allow', exact: true }).count()).toBe(0);
    await settled.getByRole('button', { name: 'Dismiss' }).click();
    await settled.waitFor({ state: 'detached' });
  });

  it('logged no page error or console error', () => {
    expect(problems).toEqual([]);
  });
});
