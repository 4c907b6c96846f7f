import type { ApprovalAnswer } from '../../host/approvals/requests.js';
import type { ApprovalAsk } from '../../host/approvals/subject.js';

/** What a driver reports about one request for permission (log line and terminal line). */
export interface ApprovalEvent {
  /** `waiting`: a person is asked (or was, before a restart); `answered`: the client got the answer. */
  phase: 'waiting' | 'answered';
  ask: ApprovalAsk;
  approvalId: string | null;
  answer?: ApprovalAnswer | undefined;
  reused?: boolean | undefined;
}

/** Where a driver client reports approval events; optional, for tests. */
export type ApprovalReporter = (event: ApprovalEvent) => void;

/** The terminal line for an approval event. */
export function approvalStatusLine(agent: string, e: ApprovalEvent, at: Date = new Date()): string {
  const time = at.toISOString().slice(11, 19);
  const what = e.ask.subject.command ?? e.ask.subject.tool ?? e.ask.kind;
  if (e.phase === 'waiting')
    return `${time} ${agent} asks ${e.approvalId}${e.reused ? ' (asked before)' : ''}: ${what} — sluice approval allow|deny ${e.approvalId}`;
  const a = e.answer;
  return `${time} ${agent} ${e.approvalId ?? ''} ${a?.decision ?? 'deny'} (${a?.by ?? 'error'}): ${what}`;
}
