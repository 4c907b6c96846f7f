// Durable approvals (docs/approvals.md): requests, decisions at most once, timeouts that deny,
// "allow always" rules and the access rule — on every backend under test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addAgentManager, removeAgentManager } from '../../src/host/agents/agent-managers.js';
import { decideApprovalRequest, listApprovals } from '../../src/host/approvals/decisions.js';
import { setApprovalPolicy } from '../../src/host/approvals/policy.js';
import { askApproval, requestApproval } from '../../src/host/approvals/requests.js';
import { listRulesOf, revokeRule } from '../../src/host/approvals/rules.js';
import type { ApprovalAsk } from '../../src/host/approvals/subject.js';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { findApprovalById } from '../../src/store/ops/approvals.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

const bash = (command: string, turnId: string | null = null): ApprovalAsk => ({
  client: 'claude',
  kind: 'tool',
  subject: { tool: 'Bash', input: { command, description: 'run it' } },
  turnId,
});

describe.each(backendsUnderTest())('approvals (%s)', (backend) => {
  let h: ConformanceHost;
  let bot: Principal;
  let meg: Principal;
  let bob: Principal;
  let rita: Principal;
  let mallory: Principal;

  beforeAll(async () => {
    h = await openConformanceHost(backend, 'approvals');
    bot = await h.agent('bot', 'turn');
    meg = await h.person('meg');
    bob = await h.person('bob');
    rita = await h.person('rita');
    mallory = await h.person('mallory');
    await addAgentManager(h.ctx, h.owner, 'bot', 'meg');
    await addAgentManager(h.ctx, h.owner, 'bot', 'rita');
    await removeAgentManager(h.ctx, meg, 'bot', 'rita');
    // bob shares a channel with bot: that is not enough to decide for it.
    await createChannel(h.ctx, h.owner, { name: 'shared', members: ['bob', 'bot'] });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('a person allows: the waiting ask resolves allow, and the decision is applied once', async () => {
    const waiting = askApproval(h.ctx, bot, bash('touch one'), {
      onWaiting: (row) => {
        void decideApprovalRequest(h.ctx, meg, { id: row.id, decision: 'allow' });
      },
    });
    const answer = await waiting;
    expect(answer).toMatchObject({ decision: 'allow', by: 'person' });
    const row = await findApprovalById(h.ctx.store.db, answer?.approvalId ?? '');
    expect(row).toMatchObject({ status: 'allowed', decided_by: meg.id });
    expect(row?.applied_at).not.toBeNull();
    // Deciding it again is a conflict and changes nothing.
    const before = await snapshotStore(h.ctx);
    await expect(
      decideApprovalRequest(h.ctx, h.owner, { id: row?.id ?? '', decision: 'deny' }),
    ).rejects.toMatchObject({
      code: 'conflict',
    });
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('a deny carries the note; without a note the model is told a person denied', async () => {
    const withNote = askApproval(h.ctx, bot, bash('touch two'), {
      onWaiting: (row) =>
        void decideApprovalRequest(h.ctx, h.owner, { id: row.id, decision: 'deny', note: 'not now' }),
    });
    expect(await withNote).toMatchObject({ decision: 'deny', note: 'not now', by: 'person' });
    const bare = askApproval(h.ctx, bot, bash('touch three'), {
      onWaiting: (row) => void decideApprovalRequest(h.ctx, meg, { id: row.id, decision: 'deny' }),
    });
    expect((await bare)?.note).toMatch(/denied/);
  });

  it('a decision given while no driver waited is used by the retried ask, without a second request', async () => {
    const first = await requestApproval(h.ctx, bot, bash('make deploy', 't_1'), 60_000);
    expect(first.reused).toBe(false);
    // The driver died; the person decides meanwhile.
    await decideApprovalRequest(h.ctx, meg, { id: first.row.id, decision: 'allow', note: 'go' });
    const retried = await askApproval(h.ctx, bot, bash('make deploy', 't_2'));
    expect(retried).toMatchObject({ decision: 'allow', approvalId: first.row.id });
    // Applied: the same thing asked a third time is a new request.
    const third = await requestApproval(h.ctx, bot, bash('make deploy'), 60_000);
    expect(third.reused).toBe(false);
    expect(third.row.id).not.toBe(first.row.id);
  });

  it('a pending request is reused by the same ask (nobody is asked twice)', async () => {
    const a = await requestApproval(h.ctx, bot, bash('ls -la'), 60_000);
    const b = await requestApproval(h.ctx, bot, bash('ls -la'), 60_000);
    expect(b).toMatchObject({ reused: true });
    expect(b.row.id).toBe(a.row.id);
    const pending = await listApprovals(h.ctx, meg, { agent: 'bot' });
    expect(pending.filter((p) => p.id === a.row.id)).toHaveLength(1);
    expect(pending[0]?.status).toBe('pending');
  });

  it('the timeout denies with a note the model sees', async () => {
    await setApprovalPolicy(h.ctx, meg, 'bot', { timeoutMs: 1000 });
    try {
      const answer = await askApproval(h.ctx, bot, bash('sleep 100'));
      expect(answer).toMatchObject({ decision: 'deny', by: 'timeout' });
      expect(answer?.note).toMatch(/No person decided/);
      const row = await findApprovalById(h.ctx.store.db, answer?.approvalId ?? '');
      expect(row?.status).toBe('expired');
    } finally {
      await setApprovalPolicy(h.ctx, meg, 'bot', { timeoutMs: 600_000 });
    }
  });

  it('allow always adds a rule: the same command with plain arguments is allowed unasked, a chained one is not', async () => {
    const asked = askApproval(h.ctx, bot, bash('npm test'), {
      onWaiting: (row) =>
        void decideApprovalRequest(h.ctx, meg, { id: row.id, decision: 'allow', always: true }),
    });
    expect(await asked).toMatchObject({ decision: 'allow', by: 'person' });
    const rules = await listRulesOf(h.ctx, meg, 'bot');
    expect(rules).toMatchObject([
      { kind: 'command_prefix', value: 'npm test', agent: 'bot', createdBy: 'meg' },
    ]);
    expect(await askApproval(h.ctx, bot, bash('npm test -- --watch=false'))).toMatchObject({
      decision: 'allow',
      by: 'rule',
    });
    const chained = await requestApproval(h.ctx, bot, bash('npm test; rm -rf ~'), 60_000);
    expect(chained.row.status).toBe('pending');
    await revokeRule(h.ctx, meg, rules[0]?.id ?? '');
    expect(await listRulesOf(h.ctx, meg, 'bot')).toEqual([]);
  });

  it('the deny policy refuses unasked and records nothing', async () => {
    await setApprovalPolicy(h.ctx, meg, 'bot', { ask: 'deny' });
    try {
      const before = await snapshotStore(h.ctx);
      expect(await askApproval(h.ctx, bot, bash('whoami'))).toMatchObject({ decision: 'deny', by: 'policy' });
      expect((await snapshotStore(h.ctx)).approvals).toEqual(before.approvals);
    } finally {
      await setApprovalPolicy(h.ctx, meg, 'bot', { ask: 'client' });
    }
  });

  describe('who may decide', () => {
    const refused: [string, () => Principal][] = [
      ['an outsider', () => mallory],
      ['a person who only shares a channel with the agent', () => bob],
      ['a removed manager', () => rita],
      ['the agent itself', () => bot],
    ];
    for (const [who, caller] of refused) {
      it(`${who} may neither decide, list, see rules, revoke nor set the policy; nothing changes`, async () => {
        const { row } = await requestApproval(h.ctx, bot, bash(`echo ${who.replace(/\W/g, '')}`), 60_000);
        const rule = await decideAlwaysRule();
        const before = await snapshotStore(h.ctx);
        for (const decision of ['allow', 'deny'] as const)
          await expect(
            decideApprovalRequest(h.ctx, caller(), { id: row.id, decision }),
          ).rejects.toMatchObject({
            code: 'denied',
          });
        await expect(listApprovals(h.ctx, caller(), { agent: 'bot' })).rejects.toMatchObject({
          code: 'denied',
        });
        await expect(listRulesOf(h.ctx, caller(), 'bot')).rejects.toMatchObject({ code: 'denied' });
        await expect(revokeRule(h.ctx, caller(), rule)).rejects.toMatchObject({ code: 'denied' });
        await expect(setApprovalPolicy(h.ctx, caller(), 'bot', { timeoutMs: 5000 })).rejects.toMatchObject({
          code: 'denied',
        });
        if (caller().kind === 'person')
          expect((await listApprovals(h.ctx, caller(), {})).filter((a) => a.agent === 'bot')).toEqual([]);
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }

    /** A rule to try revoking (made by the owner). */
    async function decideAlwaysRule(): Promise<string> {
      const { row } = await requestApproval(h.ctx, bot, bash('git status'), 60_000);
      if (row.status === 'pending')
        await decideApprovalRequest(h.ctx, h.owner, { id: row.id, decision: 'allow', always: true });
      const rules = await listRulesOf(h.ctx, h.owner, 'bot');
      return rules.find((r) => r.value === 'git status')?.id ?? '';
    }
  });
});
