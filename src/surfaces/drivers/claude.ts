import { randomUUID } from 'node:crypto';
import type { HostContext } from '../../host/context.js';
import type { Principal } from '../../host/principals.js';
import type { TurnOutcome } from '../../host/turns.js';
import { startJsonLineChild } from './child.js';
import { claudeTurnContent } from './content.js';
import { ClientGoneError, type DriverClient, type TurnRequest } from './loop.js';
import { ClaudeStreamResults, SeenResults } from './seen-results.js';
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
    '--mcp-config',
    setup.mcpConfigPath,
    '--allowedTools',
    CLAUDE_ALLOWED_TOOLS.join(','),
    ...extra,
  ];
}

/**
 * Starts one Claude Code session and returns it as a driver client: each turn writes ONE user
 * message (envelope text + attachment blocks) and waits for its `result` event.
 */
export function startClaudeClient(
  ctx: HostContext,
  agent: Principal,
  setup: DriverSetup,
  options: { bin: string; cwd: string; extraArgs: readonly string[] },
): DriverClient {
  const child = startJsonLineChild(options.bin, claudeArgs(setup, options.extraArgs), {
    cwd: options.cwd,
    env: setup.env,
  });
  const gone = child.exited.then(
    ({ code, signal }) =>
      `claude exited (${signal ?? `code ${code}`})${child.stderrTail() ? `: ${lastLine(child.stderrTail())}` : ''}`,
  );
  return {
    name: 'claude',
    sessionKey: `claude:${randomUUID()}`,
    gone,
    stop: () => child.stop(),
    async runTurn(request: TurnRequest): Promise<TurnOutcome> {
      const content = await claudeTurnContent(ctx, agent, request.delivery.text, request.delivered);
      let unsubscribe: () => void = () => {};
      // Only sluice results the stream shows Claude received count for the turn (DESIGN.md I9).
      const seen = new SeenResults(ctx, agent, request.turnId);
      const stream = new ClaudeStreamResults();
      const result = new Promise<ClaudeResult>((resolve) => {
        unsubscribe = child.onLine((line) => {
          seen.saw(stream.resultsIn(line));
          if ((line as { type?: unknown }).type === 'result') resolve(line as ClaudeResult);
        });
      });
      try {
        child.send({
          type: 'user',
          message: { role: 'user', content },
          parent_tool_use_id: null,
          session_id: '',
        });
        const ended = await Promise.race([result, gone.then((why) => ({ gone: why }))]);
        if ('gone' in ended) throw new ClientGoneError(ended.gone);
        await seen.settled();
        return claudeOutcome(ended);
      } finally {
        unsubscribe();
      }
    },
  };
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}
