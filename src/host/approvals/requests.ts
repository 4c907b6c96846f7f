import { listApprovalRules } from '../../store/ops/approval-rules.js';
import {
  type ApprovalRow,
  findApprovalById,
  findReusableApproval,
  insertApproval,
  markApprovalApplied,
} from '../../store/ops/approvals.js';
import { appendEvent } from '../../store/ops/events.js';
import { announceCommit, type HostContext, newId, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { expireDueApprovals } from './decisions.js';
import { readApprovalPolicy } from './policy.js';
import { type ApprovalAsk, approvalFingerprint, ruleAllows } from './subject.js';

/** The answer a driver gives its client. `note` is what the model is told on a deny. */
export interface ApprovalAnswer {
  decision: 'allow' | 'deny';
  note: string | null;
  /** The request it came from; null when a rule or the policy answered without one. */
  approvalId: string | null;
  /** Who answered: a rule, the agent's policy, a person, or the timeout. */
  by: 'rule' | 'policy' | 'person' | 'timeout';
}

/** What the model is told when the agent's policy refuses every request unasked. */
export const POLICY_DENY_NOTE =
  'This agent runs unattended and its Sluice approval policy refuses requests for permission: the request was denied without asking anyone.';

/** What the model is told when a person denied without a note. */
export const DENIED_WITHOUT_NOTE = 'A person denied this request (through Sluice) and gave no reason.';

export interface AskOptions {
  /** Aborting stops waiting; the request stays pending (a restarted driver finds it again). */
  signal?: AbortSignal | undefined;
  /** Called once the request waits for a person (created, or found pending from an earlier ask). */
  onWaiting?: ((row: ApprovalRow, reused: boolean) => void) | undefined;
}

/**
 * Asks for a person's decision on what the client requested and waits for it. The agent's policy
 * and "allow always" rules answer first, without a request. Otherwise the request is recorded —
 * or, when the same thing was asked before and its decision not yet applied (a driver restarted
 * while it waited), that request is reused, so nobody is asked twice — and the call resolves when a
 * person decides or the timeout denies. The decision is marked applied in the same step that
 * hands it back: a decision is applied at most once. Resolves null when `signal` aborted first.
 */
export async function askApproval(
  ctx: HostContext,
  agent: Principal,
  ask: ApprovalAsk,
  options: AskOptions = {},
): Promise<ApprovalAnswer | null> {
  const db = ctx.store.db;
  const policy = await readApprovalPolicy(db, agent.id);
  if (policy.ask === 'deny')
    return { decision: 'deny', note: POLICY_DENY_NOTE, approvalId: null, by: 'policy' };
  if ((await listApprovalRules(db, agent.id)).some((rule) => ruleAllows(rule, ask)))
    return { decision: 'allow', note: null, approvalId: null, by: 'rule' };
  const fingerprint = approvalFingerprint(ask);
  const wake = new ChangeSignal(ctx);
  try {
    for (;;) {
      const { row, reused } = await requestApproval(ctx, agent, ask, policy.timeoutMs, fingerprint);
      if (row.status === 'pending') options.onWaiting?.(row, reused);
      const decided = await waitForDecision(ctx, row.id, wake, options.signal);
      if (decided === null) return null;
      // Another driver applied it first (two sessions asked the same thing): ask anew.
      if (await applyOnce(ctx, decided.id)) return answerOf(decided);
    }
  } finally {
    wake.close();
  }
}

function answerOf(row: ApprovalRow): ApprovalAnswer {
  if (row.status === 'allowed')
    return { decision: 'allow', note: row.note, approvalId: row.id, by: 'person' };
  const timeout = row.status === 'expired';
  return {
    decision: 'deny',
    note: row.note ?? DENIED_WITHOUT_NOTE,
    approvalId: row.id,
    by: timeout ? 'timeout' : 'person',
  };
}

/**
 * Records the request without waiting: a pending or decided-but-unapplied request of the agent
 * with the same fingerprint is reused (`reused: true`), else a new pending one expires after
 * `timeoutMs`. Requests of the agent whose time ran out are marked expired first.
 */
export async function requestApproval(
  ctx: HostContext,
  agent: Principal,
  ask: ApprovalAsk,
  timeoutMs: number,
  fingerprint: string = approvalFingerprint(ask),
): Promise<{ row: ApprovalRow; reused: boolean }> {
  const now = ctx.now();
  const at = now.toISOString();
  const opened = await ctx.store.transaction(async (trx) => {
    await expireDueApprovals(trx, at, agent.id);
    const found = await findReusableApproval(trx, agent.id, fingerprint);
    if (found) return { row: found, reused: true };
    const row: ApprovalRow = {
      id: newId(ctx, 'apr'),
      agent_id: agent.id,
      turn_id: ask.turnId,
      client: ask.client,
      kind: ask.kind,
      subject: JSON.stringify(ask.subject),
      fingerprint,
      status: 'pending',
      note: null,
      decided_by: null,
      decided_at: null,
      applied_at: null,
      created_at: at,
      expires_at: new Date(now.getTime() + timeoutMs).toISOString(),
    };
    await insertApproval(trx, row);
    await appendEvent(trx, {
      kind: 'approval.changed',
      agent_id: agent.id,
      message_id: row.id,
      created_at: at,
    });
    return { row, reused: false };
  });
  announceCommit(ctx);
  return opened;
}

/** Waits until the request is decided (a timeout decides it `expired`); null when aborted. */
async function waitForDecision(
  ctx: HostContext,
  id: string,
  wake: ChangeSignal,
  signal: AbortSignal | undefined,
): Promise<ApprovalRow | null> {
  for (;;) {
    if (signal?.aborted) return null;
    wake.clear();
    const row = await findApprovalById(ctx.store.db, id);
    if (!row) return null;
    if (row.status !== 'pending') return row;
    const left = Date.parse(row.expires_at) - ctx.now().getTime();
    if (left <= 0) {
      const at = nowIso(ctx);
      if ((await ctx.store.transaction((trx) => expireDueApprovals(trx, at, row.agent_id))) > 0)
        announceCommit(ctx);
      continue;
    }
    await wake.wait(left, signal);
  }
}

/** Marks the decision applied; false when some driver already applied it. */
async function applyOnce(ctx: HostContext, id: string): Promise<boolean> {
  return ctx.store.transaction((trx) => markApprovalApplied(trx, id, nowIso(ctx)));
}

/**
 * Wakes on any commit, in this process or another (SQLite: `PRAGMA data_version`; PostgreSQL:
 * LISTEN/NOTIFY on the event log, so a decision on another host arrives too), on a deadline, or
 * on abort; remembers a wake that came before the wait. Exported for its tests.
 */
export class ChangeSignal {
  #pending = false;
  #resolve: (() => void) | undefined;
  readonly #stop: () => void;
  readonly #ctx: Pick<HostContext, 'store' | 'localCommitListeners'>;

  constructor(ctx: Pick<HostContext, 'store' | 'localCommitListeners'>) {
    this.#ctx = ctx;
    this.#stop = ctx.store.watchChanges(this.#notify);
    ctx.localCommitListeners.add(this.#notify);
  }

  #notify = (): void => {
    this.#pending = true;
    this.#resolve?.();
  };

  clear(): void {
    this.#pending = false;
  }

  wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    // An abort event never fires again for a signal that is already aborted: a listener added now
    // would wait out the whole timer (and its ref'd timer would keep a stopped driver alive).
    if (this.#pending || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.#resolve = undefined;
        resolve();
      };
      // Timers above 2^31-1 ms fire at once; a deadline that far is re-checked on the way.
      const timer = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
      signal?.addEventListener('abort', done, { once: true });
      this.#resolve = done;
    });
  }

  close(): void {
    this.#stop();
    this.#ctx.localCommitListeners.delete(this.#notify);
    this.#resolve?.();
  }
}
