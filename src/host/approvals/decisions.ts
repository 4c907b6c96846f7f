import { SluiceError } from '../../core/errors.js';
import { quoteInput, requireWellFormed } from '../../core/text.js';
import { listManagedAgents } from '../../store/ops/agent-managers.js';
import { insertApprovalRule } from '../../store/ops/approval-rules.js';
import {
  type ApprovalRow,
  decideApproval,
  findApprovalById,
  listApprovalsOf,
  listDueApprovals,
} from '../../store/ops/approvals.js';
import { appendEvent } from '../../store/ops/events.js';
import { findPrincipalById, listPrincipals } from '../../store/ops/principals.js';
import type { Db } from '../../store/store.js';
import { isHostOwner, mayDecideApprovals, requireApprovalDecider } from '../identity/access.js';
import { announceCommit, type HostContext, newId, nowIso } from '../identity/context.js';
import { type Principal, resolveAgent } from '../identity/principals.js';
import { ruleFor } from './subject.js';
import { listedSubjectBytes } from './subject-cut.js';
import { type ApprovalView, approvalView, approvalViews } from './views.js';

/** Longest note a person may give with a decision (characters). */
export const MAX_APPROVAL_NOTE_CHARS = 2000;
/** Most requests one `approval.list` returns. */
export const MAX_APPROVALS_LISTED = 200;

/** The note a model sees when nobody decided in time. */
export function timeoutNote(row: Pick<ApprovalRow, 'created_at' | 'expires_at'>): string {
  const waited = describeWait(Date.parse(row.expires_at) - Date.parse(row.created_at));
  return `No person decided this request within ${waited}, so it was denied (Sluice approval timeout). Do not retry it unasked; say what you needed in your reply.`;
}

/** A policy's timeout in the unit a person would say it in: "30 seconds", "10 minutes", "2 days". */
export function describeWait(ms: number): string {
  const units: [name: string, ms: number][] = [
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
  ];
  for (const [name, size] of units) {
    // A whole number of this unit, or at least two of it (90 minutes reads as 2 hours, not 1).
    if (ms >= 2 * size || (ms >= size && ms % size === 0)) {
      const n = Math.round(ms / size);
      return `${n} ${name}${n === 1 ? '' : 's'}`;
    }
  }
  const seconds = Math.max(1, Math.round(ms / 1000));
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

/**
 * Marks the pending requests whose time ran out `expired` (a deny, with {@link timeoutNote}), in
 * the caller's transaction. Each gets its `approval.changed` event. Returns how many.
 */
export async function expireDueApprovals(db: Db, at: string, agentId?: string): Promise<number> {
  let expired = 0;
  for (const row of await listDueApprovals(db, at, 100, agentId)) {
    if (await decideApproval(db, row.id, { status: 'expired', note: timeoutNote(row), by: null, at })) {
      await appendEvent(db, {
        kind: 'approval.changed',
        agent_id: row.agent_id,
        message_id: row.id,
        created_at: at,
      });
      expired++;
    }
  }
  return expired;
}

/** {@link expireDueApprovals} in a transaction of its own, announced to this process's listeners. */
export async function sweepExpiredApprovals(ctx: HostContext, agentId?: string): Promise<void> {
  const at = nowIso(ctx);
  if ((await listDueApprovals(ctx.store.db, at, 1, agentId)).length === 0) return;
  if ((await ctx.store.transaction((trx) => expireDueApprovals(trx, at, agentId))) > 0) announceCommit(ctx);
}

/** The agents whose requests the caller may see: all of them for the owner, else those it manages. */
async function decidableAgentIds(db: Db, caller: Principal): Promise<string[]> {
  if (caller.kind !== 'person') return [];
  if (isHostOwner(caller)) return (await listPrincipals(db, 'agent')).map((p) => p.id);
  return (await listManagedAgents(db, caller.id, { limit: 10_000 })).map((a) => a.id);
}

/**
 * Approval requests the caller may decide (the owner: every agent's; a person: those of the agents
 * it manages), of one agent or all, pending first and newest first within. Requests whose time ran
 * out are shown expired. An agent is refused (it never sees or decides requests).
 */
export async function listApprovals(
  ctx: HostContext,
  caller: Principal,
  options: { agent?: string | undefined; status?: 'pending' | 'all' | undefined },
): Promise<ApprovalView[]> {
  if (caller.kind !== 'person')
    throw new SluiceError('denied', 'an agent never sees or decides approval requests: a person does');
  let agentIds: string[];
  if (options.agent !== undefined) {
    const agent = await resolveAgent(ctx, options.agent);
    await requireApprovalDecider(ctx.store.db, caller, agent);
    agentIds = [agent.id];
  } else agentIds = await decidableAgentIds(ctx.store.db, caller);
  // What time already decided is shown as decided (the timeout is a deny, whoever looks).
  if (agentIds.length > 0) await sweepExpiredApprovals(ctx, agentIds.length === 1 ? agentIds[0] : undefined);
  const rows = await listApprovalsOf(ctx.store.db, agentIds, {
    pendingOnly: (options.status ?? 'pending') === 'pending',
    limit: MAX_APPROVALS_LISTED,
  });
  return approvalViews(ctx.store.db, rows, { shownBytes: listedSubjectBytes(rows.length) });
}

export interface ApprovalDecision {
  id: string;
  decision: 'allow' | 'deny';
  /** What the model is told on a deny; for a question (`user_input`), the answer on allow (required). */
  note?: string | undefined;
  /** With allow: also allow this exact command (or tool) for the agent from now on, without asking. */
  always?: boolean | undefined;
  /** The note answers a question: refused (nothing changed) unless the request is one (`user_input`). */
  answering?: boolean | undefined;
}

/**
 * Decides a pending request: only the owner or a manager of the agent that asked, never an agent.
 * A request already decided or whose time ran out is `conflict` and nothing changes; of two
 * deciders at once, exactly one wins.
 */
export async function decideApprovalRequest(
  ctx: HostContext,
  caller: Principal,
  input: ApprovalDecision,
): Promise<ApprovalView> {
  if (input.decision !== 'allow' && input.decision !== 'deny')
    throw new SluiceError('invalid_params', 'decision must be allow or deny');
  const note = input.note === undefined || input.note.trim() === '' ? null : input.note;
  if (note !== null) {
    requireWellFormed('note', note);
    if (note.length > MAX_APPROVAL_NOTE_CHARS)
      throw new SluiceError(
        'invalid_params',
        `the note is longer than ${MAX_APPROVAL_NOTE_CHARS} characters`,
      );
  }
  if (input.always === true && input.decision !== 'allow')
    throw new SluiceError('invalid_params', 'always goes with allow only');
  const at = nowIso(ctx);
  const row = await ctx.store.transaction(async (trx) => {
    const found = typeof input.id === 'string' ? await findApprovalById(trx, input.id) : undefined;
    if (!found) throw new SluiceError('not_found', `no approval request ${quoteInput(input.id)}`);
    const agent = await findPrincipalById(trx, found.agent_id);
    if (!agent) throw new SluiceError('not_found', `no approval request ${found.id}`);
    await requireApprovalDecider(trx, caller, agent);
    if (found.status !== 'pending')
      throw new SluiceError('conflict', `approval ${found.id} is already ${found.status}: nothing changed`);
    if (found.expires_at <= at)
      throw new SluiceError('conflict', `approval ${found.id} timed out (denied): nothing changed`);
    if (input.answering === true && found.kind !== 'user_input')
      throw new SluiceError('invalid_params', `approval ${found.id} is not a question: allow or deny it`);
    // A question is answered with text: allowing it without any would tell the model nothing.
    if (found.kind === 'user_input' && input.decision === 'allow' && note === null)
      throw new SluiceError(
        'invalid_params',
        `approval ${found.id} asks a question: answer it with text (sluice approval answer ID TEXT, or a note)`,
      );
    const rule =
      input.always === true ? ruleFor({ ...found, subject: JSON.parse(found.subject) }) : undefined;
    if (input.always === true && rule === undefined)
      throw new SluiceError('invalid_params', 'always applies to a command or a tool, not to this request');
    const status = input.decision === 'allow' ? 'allowed' : 'denied';
    if (!(await decideApproval(trx, found.id, { status, note, by: caller.id, at })))
      throw new SluiceError('conflict', `approval ${found.id} was decided meanwhile: nothing changed`);
    if (rule !== undefined)
      await insertApprovalRule(trx, {
        id: newId(ctx, 'rul'),
        agent_id: agent.id,
        ...rule,
        created_by: caller.id,
        created_at: at,
      });
    await appendEvent(trx, {
      kind: 'approval.changed',
      agent_id: agent.id,
      message_id: found.id,
      created_at: at,
    });
    return (await findApprovalById(trx, found.id)) as ApprovalRow;
  });
  announceCommit(ctx);
  return approvalView(ctx.store.db, row);
}

/** One request as the `approval.changed` push shows it to `caller`: null unless it may decide it. */
export async function approvalForDecider(
  db: Db,
  caller: Principal,
  approvalId: string,
): Promise<ApprovalView | null> {
  const row = await findApprovalById(db, approvalId);
  if (!row) return null;
  const agent = await findPrincipalById(db, row.agent_id);
  if (!agent || !(await mayDecideApprovals(db, caller, agent))) return null;
  return approvalView(db, row);
}

/**
 * One request with its subject whole, however large (`sluice approval show`): for whoever may
 * decide it (the same checks and answers as a decision); nothing is written but the timeout's deny.
 */
export async function showApproval(
  ctx: HostContext,
  caller: Principal,
  approvalId: string,
): Promise<ApprovalView> {
  if (caller.kind !== 'person')
    throw new SluiceError('denied', 'an agent never sees or decides approval requests: a person does');
  const found = typeof approvalId === 'string' ? await findApprovalById(ctx.store.db, approvalId) : undefined;
  if (!found) throw new SluiceError('not_found', `no approval request ${quoteInput(approvalId)}`);
  const agent = await findPrincipalById(ctx.store.db, found.agent_id);
  if (!agent) throw new SluiceError('not_found', `no approval request ${found.id}`);
  await requireApprovalDecider(ctx.store.db, caller, agent);
  await sweepExpiredApprovals(ctx, agent.id);
  const current = (await findApprovalById(ctx.store.db, found.id)) ?? found;
  const [view] = await approvalViews(ctx.store.db, [current], { whole: true });
  return view as ApprovalView;
}
