import type { Approval, ApprovalRule } from '../../core/wire/index.js';
import type { ApprovalRuleRow } from '../../store/ops/approval-rules.js';
import type { ApprovalRow } from '../../store/ops/approvals.js';
import { findPrincipalsByIds } from '../../store/ops/principals.js';
import type { Db } from '../../store/store.js';
import type { ApprovalSubject } from './subject.js';
import { shownSubject } from './subject-cut.js';

/**
 * An approval request as every surface shows it (docs/rpc.md `approval.list`), and an "allow
 * always" rule: the wire's shapes (core/wire/approvals.ts), declared once.
 */
export type ApprovalView = Approval;
export type ApprovalRuleView = ApprovalRule;

/** Names of the principals the rows mention, one read for all of them. */
async function namesOf(db: Db, ids: Iterable<string | null>): Promise<Map<string, string>> {
  const wanted = [...new Set([...ids].filter((id): id is string => id !== null))];
  const rows = wanted.length === 0 ? [] : await findPrincipalsByIds(db, wanted);
  return new Map(rows.map((p) => [p.id, p.name]));
}

/**
 * Requests as the surfaces show them. A subject over `shownBytes` of JSON is cut (`subjectCut`);
 * `whole` shows every subject as it was asked (`sluice approval show`).
 */
export async function approvalViews(
  db: Db,
  rows: readonly ApprovalRow[],
  options: { shownBytes?: number; whole?: boolean } = {},
): Promise<ApprovalView[]> {
  const names = await namesOf(
    db,
    rows.flatMap((r) => [r.agent_id, r.decided_by]),
  );
  return rows.map((r) => {
    const shown = options.whole
      ? { subject: JSON.parse(r.subject) as ApprovalSubject, cut: false, subjectBytes: 0 }
      : shownSubject(r.subject, options.shownBytes);
    return {
      id: r.id,
      agent: names.get(r.agent_id) ?? r.agent_id,
      client: r.client,
      kind: r.kind,
      subject: shown.subject,
      ...(shown.cut ? { subjectCut: { bytes: shown.subjectBytes } } : {}),
      turnId: r.turn_id,
      status: r.status,
      note: r.note,
      createdAt: Date.parse(r.created_at),
      expiresAt: Date.parse(r.expires_at),
      decidedBy: r.decided_by === null ? null : (names.get(r.decided_by) ?? r.decided_by),
      decidedAt: r.decided_at === null ? null : Date.parse(r.decided_at),
    };
  });
}

export async function approvalView(db: Db, row: ApprovalRow): Promise<ApprovalView> {
  return (await approvalViews(db, [row]))[0] as ApprovalView;
}

export async function approvalRuleViews(
  db: Db,
  rows: readonly ApprovalRuleRow[],
): Promise<ApprovalRuleView[]> {
  const names = await namesOf(
    db,
    rows.flatMap((r) => [r.agent_id, r.created_by]),
  );
  return rows.map((r) => ({
    id: r.id,
    agent: names.get(r.agent_id) ?? r.agent_id,
    kind: r.kind,
    value: r.value,
    createdBy: names.get(r.created_by) ?? null,
    createdAt: Date.parse(r.created_at),
  }));
}
