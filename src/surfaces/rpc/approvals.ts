import type { Approval, ApprovalRule } from '../../core/wire/index.js';
import { decideApprovalRequest, listApprovals, listRulesOf, revokeRule } from '../../host/approvals/index.js';
import type { RpcSession } from './methods.js';
import type { ParamsOf } from './schemas.js';

// `approval.list|decide|rules|rule.revoke` (docs/rpc.md, docs/approvals.md): the owner and the
// agent's managers see and decide its requests (host/identity/access.ts requireApprovalDecider). The
// replies are typed as the wire types (core/wire), so a host view that drifts from them fails the build.

export async function approvalList(
  s: RpcSession,
  p: ParamsOf<'approval.list'>,
): Promise<{ approvals: Approval[] }> {
  return { approvals: await listApprovals(s.ctx, s.principal, { agent: p.agent, status: p.status }) };
}

export async function approvalDecide(
  s: RpcSession,
  p: ParamsOf<'approval.decide'>,
): Promise<{ approval: Approval }> {
  return { approval: await decideApprovalRequest(s.ctx, s.principal, p) };
}

export async function approvalRules(
  s: RpcSession,
  p: ParamsOf<'approval.rules'>,
): Promise<{ rules: ApprovalRule[] }> {
  return { rules: await listRulesOf(s.ctx, s.principal, p.agent) };
}

export async function approvalRuleRevoke(
  s: RpcSession,
  p: ParamsOf<'approval.rule.revoke'>,
): Promise<{ revoked: true }> {
  await revokeRule(s.ctx, s.principal, p.id);
  return { revoked: true };
}
