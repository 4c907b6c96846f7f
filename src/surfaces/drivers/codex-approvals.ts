import { askApproval } from '../../host/approvals/requests.js';
import type { ApprovalAsk } from '../../host/approvals/subject.js';
import type { HostContext } from '../../host/context.js';
import type { Principal } from '../../host/principals.js';
import type { ApprovalReporter } from './approvals.js';

/** Codex's `approvalPolicy` for the driven thread: when the client asks (docs/approvals.md). */
export type CodexApprovalPolicy = 'never' | 'on-request' | 'untrusted';
export const CODEX_APPROVAL_POLICIES: readonly CodexApprovalPolicy[] = ['never', 'on-request', 'untrusted'];

/** The app-server's request for answers to the model's questions (`request_user_input`). */
export const CODEX_USER_INPUT_METHOD = 'item/tool/requestUserInput';

/**
 * What the model is told when it asks for a secret (a password, a token): a person's answer would
 * be stored in the approval record and shown to every manager, so Sluice never asks for one.
 */
export const SECRET_QUESTION_NOTE =
  'Sluice does not relay secret answers (they would be stored and shown to every manager of this agent), so nobody was asked. Say in your reply what you need and how the person can provide it.';

/** The file changes of a `fileChange` item, as Codex reported them when the item started. */
export function fileChangeDiff(item: unknown): string | undefined {
  const changes = (item as { type?: unknown; changes?: unknown } | null)?.changes;
  if ((item as { type?: unknown } | null)?.type !== 'fileChange' || !Array.isArray(changes)) return undefined;
  return changes
    .map((c: { path?: unknown; kind?: unknown; diff?: unknown }) => {
      const kind = typeof c.kind === 'string' ? c.kind : JSON.stringify(c.kind ?? null);
      return `${kind} ${String(c.path)}\n${typeof c.diff === 'string' ? c.diff : ''}`;
    })
    .join('\n');
}

/** One question of a `request_user_input` request, as Codex sends it (only the parts read here). */
interface CodexQuestion {
  id: string;
  question?: unknown;
  isSecret?: unknown;
}

/** The questions of a user-input request: each with a string id, or undefined when malformed. */
function questionsOf(params: Record<string, unknown>): CodexQuestion[] | undefined {
  const questions = params.questions;
  if (!Array.isArray(questions) || questions.length === 0) return undefined;
  const wellFormed = questions.every(
    (q) => typeof q === 'object' && q !== null && typeof (q as { id?: unknown }).id === 'string',
  );
  return wellFormed ? (questions as CodexQuestion[]) : undefined;
}

/** The request a Codex approval method stands for, or undefined for one the driver does not answer. */
export function codexAsk(
  method: string,
  params: Record<string, unknown>,
  diffs: ReadonlyMap<string, string>,
  turnId: string | null,
): ApprovalAsk | undefined {
  const reason = typeof params.reason === 'string' ? { reason: params.reason } : {};
  if (method === 'item/commandExecution/requestApproval' && typeof params.command === 'string')
    return {
      client: 'codex',
      kind: 'command',
      subject: { command: params.command, cwd: String(params.cwd ?? ''), ...reason },
      turnId,
    };
  if (method === 'item/fileChange/requestApproval') {
    const itemId = String(params.itemId ?? '');
    return {
      client: 'codex',
      kind: 'file_change',
      subject: { diff: diffs.get(itemId) ?? '(the changes were not reported)', ...reason },
      turnId,
    };
  }
  if (method === CODEX_USER_INPUT_METHOD) {
    // The questions exactly as Codex sent them (header, question, options, isOther, isSecret).
    const questions = questionsOf(params);
    if (questions === undefined) return undefined;
    return { client: 'codex', kind: 'user_input', subject: { questions }, turnId };
  }
  return undefined;
}

/** The answer to each question: the person's one answer text, given to every question asked. */
export function userInputAnswers(
  ask: ApprovalAsk,
  text: string | null,
): { answers: Record<string, unknown> } {
  if (text === null) return { answers: {} };
  const questions = (ask.subject.questions ?? []) as CodexQuestion[];
  return { answers: Object.fromEntries(questions.map((q) => [q.id, { answers: [text] }])) };
}

/** Whether any question asks for a secret (Sluice never relays those). */
function asksSecret(ask: ApprovalAsk): boolean {
  return ((ask.subject.questions ?? []) as CodexQuestion[]).some((q) => q.isSecret === true);
}

/** What the client is answered: a decision for an approval, answers for a user-input request. */
export type CodexAnswer = { decision: 'accept' | 'decline' } | { answers: Record<string, unknown> };

/**
 * The answer to a Codex request from a durable approval (docs/approvals.md). An approval: `accept`
 * or `decline`. A user-input request: the person's answer text (the decision's note) as the answer
 * to each question, or no answers. Neither a decline nor empty answers carry text to the model, so
 * a person's note (or the timeout's) first goes into the running turn as a steered user message
 * (`tellModel`). Resolves undefined when the driver stops first (the request stays pending).
 */
export async function answerCodexApproval(
  ctx: HostContext,
  agent: Principal,
  ask: ApprovalAsk,
  options: {
    signal: AbortSignal;
    tellModel: (text: string) => Promise<void>;
    report?: ApprovalReporter | undefined;
  },
): Promise<CodexAnswer | undefined> {
  const userInput = ask.kind === 'user_input';
  const answer = asksSecret(ask)
    ? { decision: 'deny' as const, note: SECRET_QUESTION_NOTE, approvalId: null, by: 'policy' as const }
    : await askApproval(ctx, agent, ask, {
        signal: options.signal,
        onWaiting: (row, reused) => options.report?.({ phase: 'waiting', ask, approvalId: row.id, reused }),
      });
  if (answer === null) return undefined;
  options.report?.({ phase: 'answered', ask, approvalId: answer.approvalId, answer });
  if (answer.decision === 'allow')
    return userInput ? userInputAnswers(ask, answer.note) : { decision: 'accept' };
  const what = userInput
    ? 'your question was not answered.'
    : `your request to ${ask.kind === 'command' ? `run ${ask.subject.command}` : 'change files'} was denied.`;
  await options.tellModel(`Sluice: ${what} ${answer.note ?? ''}`.trim()).catch(() => undefined);
  return userInput ? userInputAnswers(ask, null) : { decision: 'decline' };
}
