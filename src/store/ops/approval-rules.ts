import type { Insertable, Selectable } from 'kysely';
import type { ApprovalPoliciesTable, ApprovalRulesTable } from '../approvals-schema.js';
import type { Db } from '../store.js';

export type ApprovalRuleRow = Selectable<ApprovalRulesTable>;
export type ApprovalPolicyRow = Selectable<ApprovalPoliciesTable>;

/** Adds a rule; an identical one (same agent, kind and value) keeps the first. Returns the rule kept. */
export async function insertApprovalRule(
  db: Db,
  row: Insertable<ApprovalRulesTable>,
): Promise<ApprovalRuleRow> {
  await db
    .insertInto('approval_rules')
    .values(row)
    .onConflict((oc) => oc.columns(['agent_id', 'kind', 'value']).doNothing())
    .execute();
  return db
    .selectFrom('approval_rules')
    .selectAll()
    .where('agent_id', '=', row.agent_id)
    .where('kind', '=', row.kind)
    .where('value', '=', row.value)
    .executeTakeFirstOrThrow();
}

/** An agent's rules, oldest first (a handful per agent: not paged). */
export async function listApprovalRules(db: Db, agentId: string): Promise<ApprovalRuleRow[]> {
  return db
    .selectFrom('approval_rules')
    .selectAll()
    .where('agent_id', '=', agentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function findApprovalRule(db: Db, id: string): Promise<ApprovalRuleRow | undefined> {
  return db.selectFrom('approval_rules').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function deleteApprovalRule(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('approval_rules').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function findApprovalPolicy(db: Db, agentId: string): Promise<ApprovalPolicyRow | undefined> {
  return db.selectFrom('approval_policies').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
}

/** Sets an agent's policy (replacing the one it had). */
export async function upsertApprovalPolicy(db: Db, row: ApprovalPolicyRow): Promise<void> {
  await db
    .insertInto('approval_policies')
    .values(row)
    .onConflict((oc) =>
      oc.column('agent_id').doUpdateSet({
        ask: row.ask,
        timeout_ms: row.timeout_ms,
        updated_by: row.updated_by,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}
