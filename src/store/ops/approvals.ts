import type { Insertable, Selectable } from 'kysely';
import type { ApprovalStatus, ApprovalsTable } from '../approvals-schema.js';
import type { Db } from '../store.js';

export type ApprovalRow = Selectable<ApprovalsTable>;

export async function insertApproval(db: Db, row: Insertable<ApprovalsTable>): Promise<void> {
  await db.insertInto('approvals').values(row).execute();
}

export async function findApprovalById(db: Db, id: string): Promise<ApprovalRow | undefined> {
  return db.selectFrom('approvals').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * The request a retried ask reuses: of this agent with this fingerprint, still pending, or
 * decided and not yet applied (a person answered while no driver waited). Oldest first.
 */
export async function findReusableApproval(
  db: Db,
  agentId: string,
  fingerprint: string,
): Promise<ApprovalRow | undefined> {
  return db
    .selectFrom('approvals')
    .selectAll()
    .where('agent_id', '=', agentId)
    .where('fingerprint', '=', fingerprint)
    .where((eb) =>
      eb.or([
        eb('status', '=', 'pending'),
        eb.and([eb('status', 'in', ['allowed', 'denied']), eb('applied_at', 'is', null)]),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirst();
}

/**
 * Records a decision on a pending request; false (nothing changed) when it is no longer pending:
 * the conditional update is what makes two deciders race safely.
 */
export async function decideApproval(
  db: Db,
  id: string,
  decision: {
    status: Exclude<ApprovalStatus, 'pending'>;
    note: string | null;
    by: string | null;
    at: string;
  },
): Promise<boolean> {
  const result = await db
    .updateTable('approvals')
    .set({ status: decision.status, note: decision.note, decided_by: decision.by, decided_at: decision.at })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Marks a decided request applied; false when it already was (at most once) or is still pending. */
export async function markApprovalApplied(db: Db, id: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('approvals')
    .set({ applied_at: at })
    .where('id', '=', id)
    .where('status', '!=', 'pending')
    .where('applied_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Pending requests whose time ran out (of one agent, or of all), oldest first, at most `limit`. */
export async function listDueApprovals(
  db: Db,
  now: string,
  limit: number,
  agentId?: string,
): Promise<ApprovalRow[]> {
  let q = db
    .selectFrom('approvals')
    .selectAll()
    .where('status', '=', 'pending')
    .where('expires_at', '<=', now)
    .orderBy('created_at')
    .limit(limit);
  if (agentId !== undefined) q = q.where('agent_id', '=', agentId);
  return q.execute();
}

/** Requests of the given agents, pending first, newest first within, at most `limit`. */
export async function listApprovalsOf(
  db: Db,
  agentIds: readonly string[],
  options: { pendingOnly: boolean; limit: number },
): Promise<ApprovalRow[]> {
  if (agentIds.length === 0) return [];
  let q = db.selectFrom('approvals').selectAll().where('agent_id', 'in', agentIds);
  if (options.pendingOnly) q = q.where('status', '=', 'pending');
  return q
    .orderBy((eb) => eb.case().when('status', '=', 'pending').then(0).else(1).end())
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit)
    .execute();
}
