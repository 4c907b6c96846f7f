import { SluiceError } from '../../core/errors.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import type { ClientTurn, TurnOutcome } from '../../host/turns/index.js';
import { codexAdditionalContext } from '../hooks/codex-context.js';
import { packageVersion } from '../sluice-package.js';
import type { ApprovalReporter } from './approvals.js';
import { exitLine, startJsonLineChild } from './child.js';
import {
  answerCodexApproval,
  type CodexApprovalPolicy,
  codexAsk,
  fileChangeDiff,
} from './codex-approvals.js';
import {
  CODEX_PERMISSION_PROFILE,
  type CodexSandbox,
  type CodexThreadStarted,
  codexArgs,
  codexConfigProblem,
  requireCodexThread,
} from './codex-config.js';
import { type CodexModelError, codexModelError, DEFAULT_CODEX_RETRY_LIMIT_MS } from './codex-model-errors.js';
import { AppServerPeer, CodexRpcError } from './codex-peer.js';
import { codexTurnInput } from './content.js';
import { ClientGoneError, type DriverClient, type TurnRequest } from './loop.js';
import { reportingPersonWaits } from './person-waits.js';
import { codexSluiceResults } from './seen-results.js';
import type { DriverSetup } from './setup.js';

/**
 * Codex asks a person when the model wants to leave its sandbox (`on-request`); `untrusted` asks
 * for every command outside Codex's own safe list (a tight allow-list); `never` asks nothing.
 */
export const DEFAULT_CODEX_APPROVAL_POLICY: CodexApprovalPolicy = 'on-request';

/** The text input that leads a Codex turn; the envelope itself is in additionalContext. */
export const CODEX_TURN_LEAD =
  'New messages arrived in your Sluice inbox: the <sluice> context holds the delivery with their complete bodies. Handle them with the sluice MCP tools (message_reply, with archive: true to archive what you answered; message_archive; channel_read): your shell cannot reach the Sluice store.';

/** The text input after a steered envelope (attachment pointers follow it). */
export const CODEX_STEER_LEAD =
  'More messages arrived in your Sluice inbox while you worked: the delivery above holds their complete bodies. Handle them too, with the sluice MCP tools.';

/**
 * The text of a `userMessage` item Codex reports for the steer sent with `clientId`: its content
 * shows the model received the steered input (the driver sent `clientUserMessageId`).
 */
export function codexSteerReceived(method: string, params: unknown, clientId: string): string[] {
  if (method !== 'item/started' && method !== 'item/completed') return [];
  const item = (params as { item?: { type?: unknown; clientId?: unknown; content?: unknown } } | null)?.item;
  if (item?.type !== 'userMessage' || item.clientId !== clientId || !Array.isArray(item.content)) return [];
  return (item.content as { type?: unknown; text?: unknown }[]).flatMap((c) =>
    c.type === 'text' && typeof c.text === 'string' ? [c.text] : [],
  );
}

interface TurnCompleted {
  threadId?: string;
  turn?: { id?: string; status?: string; error?: { message?: string; codexErrorInfo?: unknown } | null };
}

/** How `turn/completed` settles the turn: only `completed` is a success. */
export function codexOutcome(params: TurnCompleted): TurnOutcome {
  const status = params.turn?.status;
  if (status === 'completed') return { ok: true };
  const reason = (params.turn?.error?.message ?? `turn ${status ?? 'ended'}`).slice(0, 300);
  if (status === 'interrupted') return { ok: false, kind: 'interrupted', reason };
  return { ok: false, kind: 'model_error', reason };
}

/** The running turn: the Sluice turn, its Codex id (once started) and steer listeners. */
interface CodexTurn {
  turn: ClientTurn;
  codexTurnId?: string;
  listeners: (() => void)[];
}

export { CodexRpcError } from './codex-peer.js';

export interface CodexClientOptions {
  bin: string;
  cwd: string;
  /** Sandbox for the model's shell: workspace-write denies the Sluice home (see CODEX_PERMISSION_PROFILE). */
  sandbox: CodexSandbox;
  /** When Codex asks a person (default on-request: to leave the sandbox); docs/approvals.md. */
  approvalPolicy?: CodexApprovalPolicy | undefined;
  onApproval?: ApprovalReporter | undefined;
  /** Called with each model error Codex reports for a running turn (while it retries, too). */
  onModelError?: ((error: CodexModelError) => void) | undefined;
  /**
   * How long Codex may keep retrying its model within a turn before the driver interrupts it and
   * returns the turn's messages as `model_error` (default {@link DEFAULT_CODEX_RETRY_LIMIT_MS}).
   */
  retryLimitMs?: number | undefined;
}

/** How long an interrupted turn may take to report its end before the driver stops waiting. */
const INTERRUPT_GRACE_MS = 10_000;

/**
 * Starts `codex app-server`, opens one thread and returns it as a driver client. What Codex asks
 * (by `approvalPolicy`, default on-request) becomes a durable approval a person decides
 * (codex-approvals.ts); with `workspace-write` the model's shell may write the working directory
 * and temp folders, never read or write the Sluice home.
 */
export async function startCodexClient(
  ctx: HostContext,
  agent: Principal,
  setup: DriverSetup,
  options: CodexClientOptions,
): Promise<DriverClient> {
  const child = startJsonLineChild(options.bin, codexArgs(setup, options.sandbox), {
    cwd: options.cwd,
    env: setup.env,
  });
  const gone = child.exited.then((exit) => exitLine('codex app-server', exit, child.stderrTail()));
  const peer = new AppServerPeer(child, gone);
  // workspace-write selects the profile that denies the Sluice home; full access keeps no sandbox.
  const sandboxChoice =
    options.sandbox === 'danger-full-access'
      ? { sandboxPolicy: { type: 'dangerFullAccess' } }
      : { permissions: CODEX_PERMISSION_PROFILE };
  let threadId: string;
  try {
    threadId = await openThread(peer, setup, options);
  } catch (err) {
    await child.stop(500);
    throw startFailure(err);
  }
  let current: CodexTurn | undefined;
  let steers = 0;
  const approvals = new AbortController();
  // The changes of each fileChange item, for the approval request that follows it.
  const diffs = new Map<string, string>();
  peer.onNotification((method, params) => {
    const item = (params as { item?: { id?: unknown } } | null)?.item;
    const diff = method === 'item/started' ? fileChangeDiff(item) : undefined;
    if (diff !== undefined && typeof item?.id === 'string') diffs.set(item.id, diff);
    if (method === 'turn/completed') diffs.clear();
  });
  peer.answerRequest = (method, params) => {
    const ask = codexAsk(method, (params ?? {}) as Record<string, unknown>, diffs, current?.turn.id ?? null);
    if (ask === undefined) return undefined;
    const turn = current;
    return answerCodexApproval(ctx, agent, ask, {
      signal: approvals.signal,
      report: reportingPersonWaits(() => turn?.turn, options.onApproval),
      tellModel: async (text) => {
        if (turn?.codexTurnId === undefined) return;
        await peer.request('turn/steer', {
          threadId,
          input: [{ type: 'text', text, text_elements: [] }],
          expectedTurnId: turn.codexTurnId,
        });
      },
    });
  };
  return {
    name: 'codex',
    sessionKey: `codex:${threadId}`,
    gone,
    stop: () => {
      approvals.abort();
      return child.stop();
    },
    async steer(request: TurnRequest): Promise<boolean> {
      const turn = current;
      if (turn?.turn.id !== request.turn.id || turn.codexTurnId === undefined) return false;
      const clientUserMessageId = `sluice-steer-${request.turn.id}-${++steers}`;
      const pointers = await codexTurnInput(ctx, agent, CODEX_STEER_LEAD, request.delivered);
      const input = [{ type: 'text', text: request.delivery.text, text_elements: [] }, ...pointers];
      const text = request.delivery.text;
      // The steered text counts once Codex reports the user message it became (DESIGN.md I9).
      const unsubscribe = peer.onNotification((method, params) => {
        if (codexSteerReceived(method, params, clientUserMessageId).includes(text)) {
          turn.turn.saw({ kind: 'user_message', text });
          unsubscribe();
        }
      });
      turn.listeners.push(unsubscribe);
      try {
        await peer.request('turn/steer', {
          threadId,
          input,
          expectedTurnId: turn.codexTurnId,
          clientUserMessageId,
        });
        return true;
      } catch {
        // "no active turn" (it just ended) or another refusal: the next turn delivers them.
        unsubscribe();
        return false;
      }
    },
    async runTurn(request: TurnRequest): Promise<TurnOutcome> {
      const input = await codexTurnInput(ctx, agent, CODEX_TURN_LEAD, request.delivered);
      let unsubscribe: () => void = () => {};
      let turnId: string | undefined;
      const early: TurnCompleted[] = [];
      const earlyErrors: CodexModelError[] = [];
      // Only sluice results Codex reports as completed items count for the turn (DESIGN.md I9).
      const turn: CodexTurn = { turn: request.turn, listeners: [] };
      current = turn;
      const failing = new ModelFailure(options.retryLimitMs ?? DEFAULT_CODEX_RETRY_LIMIT_MS, () => {
        if (turnId === undefined) return;
        // The turn ends as interrupted; until Codex says so the driver does not start the next one.
        peer.request('turn/interrupt', { threadId, turnId }).catch(() => {});
      });
      const modelError = (error: CodexModelError) => {
        options.onModelError?.(error);
        failing.report(error);
      };
      const completed = new Promise<TurnCompleted>((resolve) => {
        unsubscribe = peer.onNotification((method, params) => {
          for (const text of codexSluiceResults(method, params))
            request.turn.saw({ kind: 'tool_result', text });
          const error = codexModelError(method, params);
          if (error !== undefined) {
            if (turnId === undefined) earlyErrors.push(error);
            else if (error.turnId === undefined || error.turnId === turnId) modelError(error);
            return;
          }
          // Work on the turn after an error: Codex reached its model again.
          if (method === 'item/started' && (params as { turnId?: unknown } | null)?.turnId === turnId)
            failing.recovered();
          if (method !== 'turn/completed') return;
          const p = params as TurnCompleted;
          if (turnId === undefined) early.push(p);
          else if (p.turn?.id === turnId) resolve(p);
        });
      });
      try {
        const goneEarly = gone.then((why) => ({ gone: why }));
        const started = await Promise.race([
          peer.request<{ turn: { id: string } }>('turn/start', {
            threadId,
            input,
            additionalContext: codexAdditionalContext(request.delivery),
            approvalPolicy: options.approvalPolicy ?? DEFAULT_CODEX_APPROVAL_POLICY,
            ...sandboxChoice,
          }),
          goneEarly,
        ]);
        if ('gone' in started) throw new ClientGoneError(started.gone);
        turnId = started.turn.id;
        turn.codexTurnId = turnId;
        for (const error of earlyErrors)
          if (error.turnId === undefined || error.turnId === turnId) modelError(error);
        const seen = early.find((p) => p.turn?.id === turnId);
        const ended = seen ?? (await Promise.race([completed, goneEarly, failing.abandoned]));
        if ('gone' in ended) throw new ClientGoneError(ended.gone);
        if ('gaveUp' in ended) return ended.gaveUp;
        return failing.outcome ?? codexOutcome(ended);
      } finally {
        failing.close();
        if (current === turn) current = undefined;
        for (const stopListening of turn.listeners) stopListening();
        unsubscribe();
      }
    },
  };
}

/**
 * A turn's model errors, and when to give up on them. Codex reports a model it cannot reach with
 * `error` notifications: `willRetry: false` ends the turn (Codex also fails it), `willRetry: true`
 * may repeat forever. The driver gives up on the first, or once retries have run for `limitMs`
 * without the model answering: it interrupts the turn, which then settles as `model_error` with
 * Codex's message, as a Claude turn does on an API error.
 */
class ModelFailure {
  /** The turn's outcome once the driver gave up on it. */
  outcome: TurnOutcome | undefined;
  /** Settles when Codex does not report the interrupted turn's end within the grace period. */
  readonly abandoned: Promise<{ gaveUp: TurnOutcome }>;
  #abandon: () => void = () => {};
  #retryTimer: NodeJS.Timeout | undefined;
  #graceTimer: NodeJS.Timeout | undefined;
  #last: string | undefined;

  constructor(
    private readonly limitMs: number,
    private readonly interrupt: () => void,
  ) {
    this.abandoned = new Promise((resolve) => {
      this.#abandon = () => {
        if (this.outcome !== undefined) resolve({ gaveUp: this.outcome });
      };
    });
  }

  report(error: CodexModelError): void {
    if (this.outcome !== undefined) return;
    this.#last = error.message;
    if (!error.willRetry) {
      this.#giveUp(error.message);
      return;
    }
    this.#retryTimer ??= setTimeout(
      () =>
        this.#giveUp(
          `codex was still retrying after ${Math.round(this.limitMs / 1000)} s: ${this.#last ?? 'model error'}`,
        ),
      this.limitMs,
    );
  }

  /** The model answered again: a later error starts a new retry period. */
  recovered(): void {
    if (this.outcome !== undefined) return;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }

  close(): void {
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#graceTimer);
  }

  #giveUp(reason: string): void {
    clearTimeout(this.#retryTimer);
    this.outcome = { ok: false, kind: 'model_error', reason: reason.slice(0, 300) };
    this.interrupt();
    this.#graceTimer = setTimeout(this.#abandon, INTERRUPT_GRACE_MS);
  }
}

/**
 * `initialize`, a check of the effective config, and `thread/start`, whose answer must show the
 * sandbox the driver asked for. Returns the thread id.
 */
async function openThread(
  peer: AppServerPeer,
  setup: DriverSetup,
  options: CodexClientOptions,
): Promise<string> {
  await peer.request('initialize', {
    clientInfo: { name: 'sluice-drive', title: 'Sluice driver', version: packageVersion() },
    capabilities: { experimentalApi: true },
  });
  peer.notify('initialized');
  const read = await peer.request<{ config?: unknown }>('config/read', { cwd: options.cwd });
  const problem = codexConfigProblem(read.config, setup, options.sandbox);
  if (problem !== undefined) throw new SluiceError('denied', `sluice drive codex: ${problem}`);
  const policy = options.approvalPolicy ?? DEFAULT_CODEX_APPROVAL_POLICY;
  const started = await peer.request<CodexThreadStarted>('thread/start', {
    cwd: options.cwd,
    approvalPolicy: policy,
    ...(options.sandbox === 'danger-full-access'
      ? { sandbox: options.sandbox }
      : { permissions: CODEX_PERMISSION_PROFILE }),
  });
  requireCodexThread(started, options.sandbox, policy);
  return started.thread.id;
}

/** A start that failed: the client's exit or refusal as one line, never a bug with a stack. */
function startFailure(err: unknown): unknown {
  if (err instanceof CodexRpcError)
    return new SluiceError('unavailable', `codex app-server refused ${err.method}: ${err.rpcMessage}`);
  return err;
}
