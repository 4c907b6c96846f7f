import { cutUtf8 } from '../../core/preview.js';
import { revealInvisible } from '../../core/text.js';
import type { ApprovalAnswer, ApprovalAsk } from '../../host/approvals/index.js';

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
  const what = cutUtf8(revealInvisible(whatIsAsked(e.ask)), MAX_WHAT_BYTES).text;
  const verbs = e.ask.kind === 'user_input' ? 'answer|deny' : 'allow|deny';
  if (e.phase === 'waiting')
    return `${time} ${agent} asks ${e.approvalId}${e.reused ? ' (asked before)' : ''}: ${what} — sluice approval ${verbs} ${e.approvalId}`;
  const a = e.answer;
  return `${time} ${agent} ${e.approvalId ?? ''} ${a?.decision ?? 'deny'} (${a?.by ?? 'error'}): ${what}`;
}

/** The most of a request a terminal line shows (the page and `sluice approval show` show it whole). */
const MAX_WHAT_BYTES = 300;

/**
 * What a request would do, in a few words: Codex's command; for Claude the tool with what it acts
 * on (a `Bash` command, the file a `Write`/`Edit` touches), not the tool's name alone.
 */
function whatIsAsked(ask: ApprovalAsk): string {
  const s = ask.subject;
  if (s.command !== undefined) return s.command;
  if (s.tool !== undefined) {
    const input = (s.input ?? {}) as Record<string, unknown>;
    const target = [input.command, input.file_path, input.path, input.url, input.pattern].find(
      (v): v is string => typeof v === 'string',
    );
    return target === undefined ? s.tool : `${s.tool}: ${target}`;
  }
  return questionLine(ask) ?? ask.kind;
}

/** The questions of a user-input request on one line ("question? | question?"), if it is one. */
function questionLine(ask: ApprovalAsk): string | undefined {
  if (!Array.isArray(ask.subject.questions)) return undefined;
  const texts = (ask.subject.questions as { question?: unknown }[]).map((q) => String(q.question ?? ''));
  return `asks: ${texts.join(' | ')}`.slice(0, 200);
}
