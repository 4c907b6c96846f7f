import type { ApprovalAsk } from '../../host/approvals/index.js';
import { askApproval } from '../../host/approvals/index.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import type { ApprovalReporter } from './approvals.js';
import type { JsonLineChild } from './child.js';

/** A `can_use_tool` control request (`--permission-prompt-tool stdio`): Claude asks before a tool call. */
interface CanUseTool {
  requestId: string;
  toolName: string;
  input: unknown;
}

/** The control request in a stream-json line, when it is one. */
function controlRequestOf(
  line: unknown,
): { requestId: string; request: Record<string, unknown> } | undefined {
  const l = line as { type?: unknown; request_id?: unknown; request?: unknown };
  if (l?.type !== 'control_request' || typeof l.request_id !== 'string') return undefined;
  if (typeof l.request !== 'object' || l.request === null) return undefined;
  return { requestId: l.request_id, request: l.request as Record<string, unknown> };
}

export function canUseToolOf(line: unknown): CanUseTool | undefined {
  const control = controlRequestOf(line);
  if (control?.request.subtype !== 'can_use_tool' || typeof control.request.tool_name !== 'string')
    return undefined;
  return { requestId: control.requestId, toolName: control.request.tool_name, input: control.request.input };
}

/**
 * Answers Claude's permission prompts with durable approvals (docs/approvals.md): each
 * `can_use_tool` control request becomes an approval request the turn waits on. Allow returns the
 * input as the client sent it — the very value, never one rebuilt or taken from the store, since
 * `updatedInput` replaces what runs; deny passes the note, which the model receives verbatim as
 * the tool's error result. Other control requests are answered with an error (the driver sends
 * none that would ask for them). Returns the function that stops answering (pending waits end;
 * their requests stay pending for the next driver).
 */
export function answerClaudePermissions(
  ctx: HostContext,
  agent: Principal,
  child: JsonLineChild,
  options: { turnId: () => string | null; report?: ApprovalReporter | undefined },
): () => void {
  const stop = new AbortController();
  const respond = (requestId: string, response: Record<string, unknown>) =>
    child.send({
      type: 'control_response',
      response: { subtype: 'success', request_id: requestId, response },
    });
  const unsubscribe = child.onLine((line) => {
    const control = controlRequestOf(line);
    if (!control) return;
    const asked = canUseToolOf(line);
    if (!asked) {
      child.send({
        type: 'control_response',
        response: {
          subtype: 'error',
          request_id: control.requestId,
          error: `sluice drive does not answer ${String(control.request.subtype)}`,
        },
      });
      return;
    }
    const ask: ApprovalAsk = {
      client: 'claude',
      kind: 'tool',
      subject: { tool: asked.toolName, input: asked.input },
      turnId: options.turnId(),
    };
    void askApproval(ctx, agent, ask, {
      signal: stop.signal,
      onWaiting: (row, reused) => options.report?.({ phase: 'waiting', ask, approvalId: row.id, reused }),
    }).then(
      (answer) => {
        if (answer === null) return; // the driver stops: the request stays pending
        options.report?.({ phase: 'answered', ask, approvalId: answer.approvalId, answer });
        if (answer.decision === 'allow')
          respond(asked.requestId, { behavior: 'allow', updatedInput: asked.input });
        else respond(asked.requestId, { behavior: 'deny', message: answer.note ?? 'denied' });
      },
      (err: unknown) => {
        // The store could not record the request: nothing a person could see, so it is refused.
        const why = err instanceof Error ? err.message : String(err);
        respond(asked.requestId, {
          behavior: 'deny',
          message: `Sluice could not record this request for a person's decision (${why.slice(0, 200)}), so it was denied.`,
        });
      },
    );
  });
  return () => {
    stop.abort();
    unsubscribe();
  };
}
