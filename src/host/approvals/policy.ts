import { SluiceError } from '../../core/errors.js';
import type { ApprovalAsk } from '../../store/approvals-schema.js';
import { findApprovalPolicy, upsertApprovalPolicy } from '../../store/ops/approval-rules.js';
import type { Db } from '../../store/store.js';
import { requireApprovalDecider } from '../identity/access.js';
import { type HostContext, nowIso } from '../identity/context.js';
import { type Principal, resolveAgent } from '../identity/principals.js';

/** How long a request waits for a person before it is denied (10 minutes). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 10 * 60 * 1000;
/** Bounds of a timeout a person may set: a second to a week. */
export const MIN_APPROVAL_TIMEOUT_MS = 1000;
export const MAX_APPROVAL_TIMEOUT_MS = 7 * 24 * 3600 * 1000;

/** An agent's approval settings: which requests go to a person, and how long they wait. */
export interface ApprovalPolicy {
  /** `client`: whatever the client asks goes to a person (the default); `deny`: refused unasked. */
  ask: ApprovalAsk;
  timeoutMs: number;
}

export const DEFAULT_APPROVAL_POLICY: ApprovalPolicy = {
  ask: 'client',
  timeoutMs: DEFAULT_APPROVAL_TIMEOUT_MS,
};

/** The agent's policy (the defaults when none was set). */
export async function readApprovalPolicy(db: Db, agentId: string): Promise<ApprovalPolicy> {
  const row = await findApprovalPolicy(db, agentId);
  return row ? { ask: row.ask, timeoutMs: row.timeout_ms } : { ...DEFAULT_APPROVAL_POLICY };
}

/** The agent's policy, for whoever may decide its requests. */
export async function approvalPolicyOf(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
): Promise<ApprovalPolicy> {
  const agent = await resolveAgent(ctx, agentName);
  await requireApprovalDecider(ctx.store.db, caller, agent);
  return readApprovalPolicy(ctx.store.db, agent.id);
}

/** Changes the agent's policy (the owner or a manager only); what is not given keeps its value. */
export async function setApprovalPolicy(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
  change: Partial<ApprovalPolicy>,
): Promise<ApprovalPolicy> {
  if (change.ask !== undefined && change.ask !== 'client' && change.ask !== 'deny')
    throw new SluiceError('invalid_params', 'ask must be client or deny');
  const t = change.timeoutMs;
  if (t !== undefined && (!Number.isInteger(t) || t < MIN_APPROVAL_TIMEOUT_MS || t > MAX_APPROVAL_TIMEOUT_MS))
    throw new SluiceError('invalid_params', 'the approval timeout must be between 1 second and 7 days');
  const agent = await resolveAgent(ctx, agentName);
  return ctx.store.transaction(async (trx) => {
    await requireApprovalDecider(trx, caller, agent);
    const policy = { ...(await readApprovalPolicy(trx, agent.id)), ...definedOnly(change) };
    await upsertApprovalPolicy(trx, {
      agent_id: agent.id,
      ask: policy.ask,
      timeout_ms: policy.timeoutMs,
      updated_by: caller.id,
      updated_at: nowIso(ctx),
    });
    return policy;
  });
}

function definedOnly(change: Partial<ApprovalPolicy>): Partial<ApprovalPolicy> {
  return Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined));
}
