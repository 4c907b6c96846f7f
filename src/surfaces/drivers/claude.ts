import { randomUUID } from 'node:crypto';
import { SluiceError } from '../../core/errors.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import type { ClientTurn, TurnOutcome } from '../../host/turns/index.js';
import type { ApprovalReporter } from './approvals.js';
import { type JsonLineChild, startJsonLineChild } from './child.js';
import { answerClaudePermissions } from './claude-permissions.js';
import { claudeTurnContent } from './content.js';
import { ClientGoneError, type DriverClient, type TurnRequest } from './loop.js';
import { reportingPersonWaits } from './person-waits.js';
import { ClaudeStreamResults } from './seen-results.js';
import type { DriverSetup } from './setup.js';

/** The sluice MCP tools a driven Claude may call without a prompt (the whole `sluice` server). */
export const CLAUDE_ALLOWED_TOOLS = ['mcp__sluice', 'Bash(sluice message:*)'];

/** The stream-json `result` event, as far as settlement reads it. */
export interface ClaudeResult {
  type: 'result';
  subtype?: string;
  is_error?: boolean;
  api_error_status?: number | null;
  terminal_reason?: string;
  result?: unknown;
}

/**
 * How a `result` event settles the turn. A model/API error is reported with `is_error: true`
 * (even when `subtype` says success) and an `api_error_status`; other error subtypes name why the
 * client gave up.
 */
export function claudeOutcome(result: ClaudeResult): TurnOutcome {
  if (result.is_error !== true && result.subtype === 'success') return { ok: true };
  const reason =
    typeof result.result === 'string' ? result.result.slice(0, 300) : (result.subtype ?? 'error');
  if (typeof result.api_error_status === 'number' || result.terminal_reason === 'api_error') {
    return { ok: false, kind: 'model_error', reason };
  }
  if (result.subtype === 'error_max_turns') return { ok: false, kind: 'max_turns', reason };
  if (result.subtype === 'error_during_execution') return { ok: false, kind: 'execution_error', reason };
  return { ok: false, kind: 'client_error', reason };
}

/** `claude -p` arguments for a long-lived stream-json session with sluice registered. */
export function claudeArgs(setup: DriverSetup, extra: readonly string[]): string[] {
  return [
    '-p',
    '--input-format',
    'stream-json',
    '--output-format',
    'stream-json',
    '--verbose',
    // Echoes each user message when the client takes it in: a steered message counts only then.
    '--replay-user-messages',
    '--mcp-config',
    setup.mcpConfigPath,
    '--settings',
    setup.settingsPath,
    '--allowedTools',
    CLAUDE_ALLOWED_TOOLS.join(','),
    // A `defaultMode` in the user's settings (acceptEdits, bypassPermissions) would widen the
    // unattended session silently; an explicit `-- --permission-mode …` after it still does.
    '--permission-mode',
    'default',
    // What the allow-list does not cover is asked on the stream-json wire (a `can_use_tool`
    // control request) and becomes a durable approval a person decides (claude-permissions.ts).
    '--permission-prompt-tool',
    'stdio',
    ...extra,
  ];
}

/** The running turn, as steering sees it: the Sluice turn and the steers awaiting their echo. */
interface ClaudeTurn {
  turn: ClientTurn;
  /** Steered envelope texts written but not yet echoed by the client. */
  awaiting: Set<string>;
  /** The last `result` arrived: a message written now would start a turn of its own. */
  closed: boolean;
}

/** The text blocks of a stream-json `user` event (the echo of a user message). */
function userTexts(line: unknown): string[] {
  const l = line as { type?: unknown; parent_tool_use_id?: unknown; message?: { content?: unknown } };
  // A subagent's user lines are not what the turn's model received.
  if (l.type !== 'user' || (l.parent_tool_use_id ?? null) !== null || !Array.isArray(l.message?.content))
    return [];
  return (l.message.content as { type?: unknown; text?: unknown }[]).flatMap((b) =>
    b.type === 'text' && typeof b.text === 'string' ? [b.text] : [],
  );
}

/** A turn that got several `result` events (steered messages Claude ran after the first) fails if any did. */
function worstOf(outcomes: readonly TurnOutcome[]): TurnOutcome {
  return outcomes.find((o) => !o.ok) ?? { ok: true };
}

/**
 * Starts one Claude Code session and returns it as a driver client: each turn writes one user
 * message (envelope text + attachment blocks) and waits for its `result` event. A steer writes
 * another user message while the turn runs: Claude Code (2.1.332) hands it to the model at its next
 * model call of the running turn (after a tool result), or — when the turn was already answering
 * without tools — runs it as a follow-up with a `result` of its own. Either way its echo
 * (`--replay-user-messages`) shows the model received it, and the turn ends with the last result.
 */
export async function startClaudeClient(
  ctx: HostContext,
  agent: Principal,
  setup: DriverSetup,
  options: {
    bin: string;
    cwd: string;
    extraArgs: readonly string[];
    onApproval?: ApprovalReporter | undefined;
    /** How long Claude Code may take to answer `initialize`, ms. */
    handshakeMs?: number | undefined;
  },
): Promise<DriverClient> {
  const child = startJsonLineChild(options.bin, claudeArgs(setup, options.extraArgs), {
    cwd: options.cwd,
    env: setup.env,
  });
  const gone = child.exited.then(
    ({ code, signal }) =>
      `claude exited (${signal ?? `code ${code}`})${child.stderrTail() ? `: ${lastLine(child.stderrTail())}` : ''}`,
  );
  try {
    await claudeHandshake(child, gone, options.handshakeMs ?? CLAUDE_HANDSHAKE_MS);
  } catch (err) {
    await child.kill();
    throw err;
  }
  let current: ClaudeTurn | undefined;
  const stopAnswering = answerClaudePermissions(ctx, agent, child, {
    turnId: () => current?.turn.id ?? null,
    report: reportingPersonWaits(() => current?.turn, options.onApproval),
  });
  return {
    name: 'claude',
    sessionKey: `claude:${randomUUID()}`,
    gone,
    // Closing Claude's stdin cancels a permission request that waits and the session goes on
    // with the turn (its sluice MCP server still acting as the agent), so a client with a turn in
    // flight is ended at once; an idle one is let go gently (stdin closed, it exits by itself).
    endTurn: () => {
      stopAnswering();
      return child.kill();
    },
    stop: () => {
      stopAnswering();
      return current === undefined ? child.stop() : child.kill();
    },
    async steer(request: TurnRequest): Promise<boolean> {
      const turn = current;
      if (turn?.turn.id !== request.turn.id || turn.closed) return false;
      const content = await claudeTurnContent(ctx, agent, request.delivery.text, request.delivered);
      // Checked again after the await: the result may have arrived meanwhile.
      if (turn.closed || current !== turn) return false;
      turn.awaiting.add(request.delivery.text);
      child.send({
        type: 'user',
        message: { role: 'user', content },
        parent_tool_use_id: null,
        session_id: '',
      });
      return true;
    },
    async runTurn(request: TurnRequest): Promise<TurnOutcome> {
      const content = await claudeTurnContent(ctx, agent, request.delivery.text, request.delivered);
      let unsubscribe: () => void = () => {};
      // Only sluice results the stream shows Claude received count for the turn (DESIGN.md I9).
      const turn: ClaudeTurn = { turn: request.turn, awaiting: new Set(), closed: false };
      const outcomes: TurnOutcome[] = [];
      const stream = new ClaudeStreamResults();
      const result = new Promise<TurnOutcome>((resolve) => {
        unsubscribe = child.onLine((line) => {
          for (const text of stream.resultsIn(line)) request.turn.saw({ kind: 'tool_result', text });
          for (const text of userTexts(line)) {
            // The echo of a steered message: the model receives exactly this text now.
            if (turn.awaiting.delete(text)) request.turn.saw({ kind: 'user_message', text });
          }
          if ((line as { type?: unknown }).type !== 'result') return;
          outcomes.push(claudeOutcome(line as ClaudeResult));
          // A steered message not yet taken in runs after this result, as a follow-up of its own.
          if (turn.awaiting.size > 0) return;
          turn.closed = true;
          resolve(worstOf(outcomes));
        });
      });
      current = turn;
      try {
        child.send({
          type: 'user',
          message: { role: 'user', content },
          parent_tool_use_id: null,
          session_id: '',
        });
        const ended = await Promise.race([result, gone.then((why) => ({ gone: why }))]);
        if ('gone' in ended) throw new ClientGoneError(ended.gone);
        return ended;
      } finally {
        turn.closed = true;
        if (current === turn) current = undefined;
        unsubscribe();
      }
    },
  };
}

/** How long Claude Code may take to answer the driver's `initialize` (a cold start takes ~2.5 s). */
export const CLAUDE_HANDSHAKE_MS = 60_000;

/**
 * The session's handshake: the `initialize` control request (the one Claude's own SDK opens a
 * stream-json session with), answered once Claude Code has read its arguments and settings and
 * listens. Until then the driver is not ready: a client that exits at once (an unknown option
 * after `--`, a settings file it refuses) is the driver's start failure with its own line, instead
 * of a "ready" followed by a crash.
 */
async function claudeHandshake(child: JsonLineChild, gone: Promise<string>, ms: number): Promise<void> {
  const requestId = `sluice-initialize-${randomUUID()}`;
  let unsubscribe: () => void = () => {};
  const answered = new Promise<{ refused?: string }>((resolve) => {
    unsubscribe = child.onLine((line) => {
      const l = line as {
        type?: unknown;
        response?: { subtype?: unknown; request_id?: unknown; error?: unknown };
      };
      if (l?.type !== 'control_response' || l.response?.request_id !== requestId) return;
      resolve(
        l.response.subtype === 'success' ? {} : { refused: String(l.response.error ?? 'no reason given') },
      );
    });
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ late: true }>((resolve) => {
    timer = setTimeout(() => resolve({ late: true }), ms);
    timer.unref();
  });
  try {
    child.send({ type: 'control_request', request_id: requestId, request: { subtype: 'initialize' } });
    const outcome = await Promise.race([answered, gone.then((why) => ({ gone: why })), late]);
    if ('gone' in outcome) throw new ClientGoneError(outcome.gone);
    if ('late' in outcome)
      throw new SluiceError(
        'unavailable',
        `claude did not answer the driver's initialize within ${ms / 1000} s`,
      );
    if (outcome.refused !== undefined)
      throw new SluiceError(
        'unavailable',
        `claude refused the driver's initialize: ${outcome.refused.slice(0, 300)}`,
      );
  } finally {
    clearTimeout(timer);
    unsubscribe();
  }
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}
