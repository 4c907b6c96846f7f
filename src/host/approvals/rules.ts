import { SluiceError } from '../../core/errors.js';
import { deleteApprovalRule, findApprovalRule, listApprovalRules } from '../../store/ops/approval-rules.js';
import { findPrincipalById } from '../../store/ops/principals.js';
import { requireApprovalDecider } from '../identity/access.js';
import type { HostContext } from '../identity/context.js';
import { type Principal, resolveAgent } from '../identity/principals.js';
import { type ApprovalRuleView, approvalRuleViews } from './views.js';

// "Allow always" rules (docs/approvals.md): made by a person's `allow --always`, listed and revoked
// by whoever may decide the agent's requests. A driver reads them before asking anyone.

/** The agent's rules, oldest first. */
export async function listRulesOf(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
): Promise<ApprovalRuleView[]> {
  const agent = await resolveAgent(ctx, agentName);
  await requireApprovalDecider(ctx.store.db, caller, agent);
  return approvalRuleViews(ctx.store.db, await listApprovalRules(ctx.store.db, agent.id));
}

/** Revokes a rule: the next such request is asked again. */
export async function revokeRule(ctx: HostContext, caller: Principal, ruleId: string): Promise<void> {
  await ctx.store.transaction(async (trx) => {
    const rule = typeof ruleId === 'string' ? await findApprovalRule(trx, ruleId) : undefined;
    if (!rule) throw new SluiceError('not_found', `no approval rule ${String(ruleId).slice(0, 80)}`);
    const agent = await findPrincipalById(trx, rule.agent_id);
    if (!agent) throw new SluiceError('not_found', `no approval rule ${rule.id}`);
    await requireApprovalDecider(trx, caller, agent);
    await deleteApprovalRule(trx, rule.id);
  });
}
