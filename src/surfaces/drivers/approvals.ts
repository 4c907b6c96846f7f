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
  const what = e.ask.subject.command ?? e.ask.subject.tool ?? questionLine(e.ask) ?? e.ask.kind;
  const verbs = e.ask.kind === 'user_input' ? 'answer|deny' : 'allow|deny';
  if (e.phase === 'waiting')
    return `${time} ${agent} asks ${e.approvalId}${e.reused ? ' (asked before)' : ''}: ${what} — sluice approval ${verbs} ${e.approvalId}`;
  const a = e.answer;
  return `${time} ${agent} ${e.approvalId ?? ''} ${a?.decision ?? 'deny'} (${a?.by ?? 'error'}): ${what}`;
}

/** The questions of a user-input request on one line ("question? | question?"), if it is one. */
function questionLine(ask: ApprovalAsk): string | undefined {
  if (!Array.isArray(ask.subject.questions)) return undefined;
  const texts = (ask.subject.questions as { question?: unknown }[]).map((q) => String(q.question ?? ''));
  return `asks: ${texts.join(' | ')}`.slice(0, 200);
}
