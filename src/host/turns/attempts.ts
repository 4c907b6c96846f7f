import {
  addDispatchAttempt,
  clearDispatchAttempts,
  inboxSeqsOf,
  listDispatchAttempts,
  listExhaustedAttempts,
  pruneDispatchAttempts,
  removeDispatchAttempt,
  setDispatchAttemptReason,
} from '../../store/ops/dispatch-attempts.js';
import { findInboxEntry } from '../../store/ops/inbox.js';
import { appendProgressEvents } from '../../store/ops/message-status.js';
import { announceCommit, type HostContext, nowIso } from '../context.js';
import { transitionEntry } from '../inbox.js';
import type { Principal } from '../principals.js';

/**
 * Driver turns that may carry one message without settling before it is returned with its reason
 * (one sender must not be able to stop a driven agent with a message its client chokes on).
 */
export const DEFAULT_MAX_DISPATCH_ATTEMPTS = 3;

/** The failure kind of a message returned because its turns kept ending without settling. */
export const REPEATED_FAILURE_KIND = 'repeated_failure';

/** The reason when nobody could say why the turn ended (the driver was killed, or crashed). */
const UNKNOWN_END = 'the client or the driver stopped during the turn';

/**
 * Counts one attempt for each message a turn is about to carry, durably, before the client sees
 * it: a driver that is killed (or OOM-killed by what it carries) cannot count afterwards. Returns
 * the messages' inbox seqs for the calls that follow.
 */
export async function countDispatch(
  ctx: HostContext,
  agent: Principal,
  messageIds: readonly string[],
): Promise<number[]> {
  if (messageIds.length === 0) return [];
  const at = nowIso(ctx);
  const counted = await ctx.store.transaction(async (trx) => {
    const seqs = (await inboxSeqsOf(trx, agent.id, messageIds)).map((e) => e.seq);
    await addDispatchAttempt(trx, agent.id, seqs, at);
    // Carried to the client: the messages' status moved to offered.
    await appendProgressEvents(trx, agent.id, seqs, at);
    return seqs;
  });
  announceCommit(ctx);
  return counted;
}

/** Takes back the attempt of a turn that was stopped on purpose (SIGINT/SIGTERM): nobody's fault. */
export async function forgiveDispatch(
  ctx: HostContext,
  agent: Principal,
  seqs: readonly number[],
): Promise<void> {
  if (seqs.length === 0) return;
  await ctx.store.transaction((trx) => removeDispatchAttempt(trx, agent.id, seqs));
}

/** Records why a turn that carried these messages ended without settling (client error, exit). */
export async function noteUnsettledDispatch(
  ctx: HostContext,
  agent: Principal,
  seqs: readonly number[],
  reason: string,
): Promise<void> {
  if (seqs.length === 0) return;
  const line = (reason.split('\n')[0] ?? '').slice(0, 300);
  await ctx.store.transaction((trx) => setDispatchAttemptReason(trx, agent.id, seqs, line));
}

/**
 * A turn carrying these messages settled (ok or failed): the client coped with them, so their
 * unsettled attempts are forgotten; rows of messages that left the queue meanwhile go too.
 */
export async function clearDispatch(
  ctx: HostContext,
  agent: Principal,
  seqs: readonly number[],
): Promise<void> {
  await ctx.store.transaction(async (trx) => {
    await clearDispatchAttempts(trx, agent.id, seqs);
    await pruneDispatchAttempts(trx, agent.id);
  });
}

/** Unsettled attempts per message id (0 when none), for the given delivered ids. */
export async function dispatchAttemptsOf(
  ctx: HostContext,
  agent: Principal,
  messageIds: readonly string[],
): Promise<number[]> {
  if (messageIds.length === 0) return [];
  const db = ctx.store.db;
  const seqOf = new Map((await inboxSeqsOf(db, agent.id, messageIds)).map((e) => [e.id, e.seq]));
  const attempts = new Map(
    (await listDispatchAttempts(db, agent.id, [...seqOf.values()])).map((a) => [a.messageSeq, a.attempts]),
  );
  return messageIds.map((id) => attempts.get(seqOf.get(id) ?? -1) ?? 0);
}

/**
 * Returns every waiting message that has reached `maxAttempts` unsettled turns, with failure kind
 * `repeated_failure` and a reason naming the last cause. Returned cards block dispatch as any
 * failed turn's do, until a person resumes or withdraws them; resuming starts the count afresh.
 * Returns the message ids it returned.
 */
export async function returnExhaustedMessages(
  ctx: HostContext,
  agent: Principal,
  maxAttempts: number = DEFAULT_MAX_DISPATCH_ATTEMPTS,
): Promise<{ id: string; reason: string }[]> {
  const at = nowIso(ctx);
  const returned = await ctx.store.transaction(async (trx) => {
    const out: { id: string; reason: string }[] = [];
    for (const exhausted of await listExhaustedAttempts(trx, agent.id, maxAttempts)) {
      const entry = await findInboxEntry(trx, agent.id, exhausted.messageSeq);
      if (entry?.state !== 'waiting') continue;
      const reason = `${exhausted.attempts} turns carrying it ended without settling; last: ${exhausted.lastReason ?? UNKNOWN_END}`;
      await transitionEntry(trx, entry, 'returned', at, {
        failure_kind: REPEATED_FAILURE_KIND,
        returned_reason: reason.slice(0, 500),
      });
      await clearDispatchAttempts(trx, agent.id, [exhausted.messageSeq]);
      out.push({ id: entry.message_id, reason });
    }
    return out;
  });
  if (returned.length > 0) announceCommit(ctx);
  return returned;
}
