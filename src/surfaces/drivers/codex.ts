import type { HostContext } from '../../host/context.js';
import type { Principal } from '../../host/principals.js';
import type { TurnOutcome } from '../../host/turns.js';
import { codexAdditionalContext } from '../hooks/codex-context.js';
import { type JsonLineChild, startJsonLineChild } from './child.js';
import { codexTurnInput } from './content.js';
import { ClientGoneError, type DriverClient, type TurnRequest } from './loop.js';
import type { DriverSetup } from './setup.js';

/** The text input that leads a Codex turn; the envelope itself is in additionalContext. */
export const CODEX_TURN_LEAD =
  'New messages arrived in your Sluice inbox: the <sluice> context holds the delivery with their complete bodies. Handle them, replying with `sluice message reply`.';

/** TOML literal for a `-c key=value` override (JSON strings and arrays are valid TOML). */
function toml(value: string | string[] | Record<string, string>): string {
  if (typeof value === 'string' || Array.isArray(value)) return JSON.stringify(value);
  return `{ ${Object.entries(value)
    .map(([k, v]) => `${JSON.stringify(k)} = ${JSON.stringify(v)}`)
    .join(', ')} }`;
}

/** `codex app-server` with the sluice MCP server registered through config overrides. */
export function codexArgs(setup: DriverSetup): string[] {
  return [
    'app-server',
    '-c',
    `mcp_servers.sluice.command=${toml(setup.mcp.command)}`,
    '-c',
    `mcp_servers.sluice.args=${toml(setup.mcp.args)}`,
    '-c',
    `mcp_servers.sluice.env=${toml(setup.mcp.env)}`,
    // A login shell re-reads /etc/profile, which resets PATH and hides the `sluice` shim.
    '-c',
    'allow_login_shell=false',
  ];
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

/** A JSON-RPC peer over the app-server's stdio (no `jsonrpc` member on this wire). */
class AppServerPeer {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly notificationListeners = new Set<(method: string, params: unknown) => void>();

  constructor(private readonly child: JsonLineChild) {
    child.onLine((line) => this.dispatch(line as Record<string, unknown>));
    void child.exited.then(() => {
      for (const p of this.pending.values()) p.reject(new ClientGoneError('codex app-server exited'));
      this.pending.clear();
    });
  }

  private dispatch(line: Record<string, unknown>): void {
    const { id, method } = line;
    if (typeof method === 'string' && id !== undefined) {
      // A request from the server (approval, user input): the driver is unattended and says no.
      this.child.send({ id, error: { code: -32601, message: `sluice drive does not answer ${method}` } });
      return;
    }
    if (typeof method === 'string') {
      for (const fn of this.notificationListeners) fn(method, line.params);
      return;
    }
    if (typeof id === 'number') {
      const waiter = this.pending.get(id);
      if (!waiter) return;
      this.pending.delete(id);
      if (line.error !== undefined)
        waiter.reject(new Error(`codex: ${JSON.stringify(line.error).slice(0, 300)}`));
      else waiter.resolve(line.result);
    }
  }

  request<T>(method: string, params: unknown): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, method, params });
    });
  }

  notify(method: string): void {
    this.child.send({ method });
  }

  onNotification(fn: (method: string, params: unknown) => void): () => void {
    this.notificationListeners.add(fn);
    return () => {
      this.notificationListeners.delete(fn);
    };
  }
}

export interface CodexClientOptions {
  bin: string;
  cwd: string;
  /** Sandbox for the model's shell commands; the sluice home is always writable in workspace-write. */
  sandbox: 'workspace-write' | 'danger-full-access';
}

/**
 * Starts `codex app-server`, opens one thread and returns it as a driver client. Approvals are
 * `never` (an unattended driver cannot answer prompts); with `workspace-write` the model's shell
 * may write the working directory and the sluice home (so `sluice message …` works), nothing else.
 */
export async function startCodexClient(
  ctx: HostContext,
  agent: Principal,
  setup: DriverSetup,
  options: CodexClientOptions,
): Promise<DriverClient> {
  const child = startJsonLineChild(options.bin, codexArgs(setup), { cwd: options.cwd, env: setup.env });
  const gone = child.exited.then(
    ({ code, signal }) =>
      `codex app-server exited (${signal ?? `code ${code}`})${child.stderrTail() ? `: ${lastLine(child.stderrTail())}` : ''}`,
  );
  const peer = new AppServerPeer(child);
  const sandboxPolicy =
    options.sandbox === 'danger-full-access'
      ? { type: 'dangerFullAccess' }
      : {
          type: 'workspaceWrite',
          writableRoots: [ctx.home],
          networkAccess: false,
          excludeTmpdirEnvVar: false,
          excludeSlashTmp: false,
        };
  let threadId: string;
  try {
    await peer.request('initialize', {
      clientInfo: { name: 'sluice-drive', title: 'Sluice driver', version: '0.1.0' },
      capabilities: { experimentalApi: true },
    });
    peer.notify('initialized');
    const started = await peer.request<{ thread: { id: string } }>('thread/start', {
      cwd: options.cwd,
      approvalPolicy: 'never',
      sandbox: options.sandbox,
    });
    threadId = started.thread.id;
  } catch (err) {
    await child.stop(500);
    throw err;
  }
  return {
    name: 'codex',
    sessionKey: `codex:${threadId}`,
    gone,
    stop: () => child.stop(),
    async runTurn(request: TurnRequest): Promise<TurnOutcome> {
      const input = await codexTurnInput(ctx, agent, CODEX_TURN_LEAD, request.delivered);
      let unsubscribe: () => void = () => {};
      let turnId: string | undefined;
      const early: TurnCompleted[] = [];
      const completed = new Promise<TurnCompleted>((resolve) => {
        unsubscribe = peer.onNotification((method, params) => {
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
            approvalPolicy: 'never',
            sandboxPolicy,
          }),
          goneEarly,
        ]);
        if ('gone' in started) throw new ClientGoneError(started.gone);
        turnId = started.turn.id;
        const seen = early.find((p) => p.turn?.id === turnId);
        const ended = seen ?? (await Promise.race([completed, goneEarly]));
        if ('gone' in ended) throw new ClientGoneError(ended.gone);
        return codexOutcome(ended);
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
