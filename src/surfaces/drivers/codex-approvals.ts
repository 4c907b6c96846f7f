import { askApproval } from '../../host/approvals/requests.js';
import type { ApprovalAsk } from '../../host/approvals/subject.js';
import type { HostContext } from '../../host/context.js';
import type { Principal } from '../../host/principals.js';
import type { ApprovalReporter } from './approvals.js';

/** Codex's `approvalPolicy` for the driven thread: when the client asks (docs/approvals.md). */
export type CodexApprovalPolicy = 'never' | 'on-request' | 'untrusted';
export const CODEX_APPROVAL_POLICIES: readonly CodexApprovalPolicy[] = ['never', 'on-request', 'untrusted'];

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
  return undefined;
}

/**
 * The answer to a Codex approval request from a durable approval (docs/approvals.md): `accept` or
 * `decline`. A decline carries no text to the model, so a person's note (or the timeout's) first
 * goes into the running turn as a steered user message (`tellModel`), then the decline.
 * Resolves undefined when the driver stops first (the request stays pending).
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
): Promise<{ decision: 'accept' | 'decline' } | undefined> {
  const answer = await askApproval(ctx, agent, ask, {
    signal: options.signal,
    onWaiting: (row, reused) => options.report?.({ phase: 'waiting', ask, approvalId: row.id, reused }),
  });
  if (answer === null) return undefined;
  options.report?.({ phase: 'answered', ask, approvalId: answer.approvalId, answer });
  if (answer.decision === 'allow') return { decision: 'accept' };
  const what = ask.kind === 'command' ? `run ${ask.subject.command}` : 'change files';
  await options
    .tellModel(`Sluice: your request to ${what} was denied. ${answer.note ?? ''}`.trim())
    .catch(() => undefined);
  return { decision: 'decline' };
}
