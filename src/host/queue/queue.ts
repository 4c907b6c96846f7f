import { SluiceError } from '../../core/errors.js';
import { isPendingState } from '../../core/pending.js';
import { quoteInput, requireWellFormed, sliceWhole } from '../../core/text.js';
import type { QueueSummary } from '../../core/wire/index.js';
import { appendEvent } from '../../store/ops/events.js';
import {
  findInboxEntry,
  firstReadableInState,
  newestPendingPersonEntry,
  readablePendingCounts,
} from '../../store/ops/inbox.js';
import { findMessageById } from '../../store/ops/messages.js';
import { findQueue, type QueueRow, setPaused } from '../../store/ops/queues.js';
import type { Db } from '../../store/store.js';
import {
  canWithdraw,
  checkQueueAccess,
  mayManageAgent,
  pauserView,
  type QueueAccess,
  requireAgentManager,
  requireQueueAccess,
  requireSharedChannel,
} from '../identity/access.js';
import { announceCommit, type HostContext, nowIso } from '../identity/context.js';
import { type AgentPresence, agentPresence } from '../identity/presence.js';
import { type Principal, resolveAgent } from '../identity/principals.js';
import { editMessage } from '../messages/edit-message.js';
import { transitionEntry } from './inbox.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { QueueSummary };

/** A summary before it is fitted to a reader: the channels its two message ids belong to. */
export interface QueueSummaryFacts {
  summary: QueueSummary;
  newestPersonChannelId: string | null;
  blockingChannelId: string | null;
}

/**
 * The queue summary from maintained counters plus two index probes: constant work whatever the
 * queue length, and never a body. Not for a reader as is: see {@link summaryForReader}.
 */
export async function loadQueueSummary(db: Db, agent: Principal): Promise<QueueSummaryFacts> {
  const queue = await requireQueue(db, agent);
  // What the agent may read now: entries of channels it left stay pending but are neither counted
  // nor blocking (store/ops/inbox.ts readablePendingCounts).
  const counts = await readablePendingCounts(db, queue);
  const newestPerson = await newestPendingPersonEntry(db, agent.id);
  const blocking = counts.returned === 0 ? undefined : await firstReadableInState(db, agent.id, 'returned');
  return {
    summary: {
      agent: agent.name,
      generation: queue.generation,
      revision: queue.revision,
      total: counts.waiting + counts.returned,
      totalQueued: queue.next_position - 1,
      counts: { person: counts.person, agent: counts.agent, unknown: counts.unknown },
      newestPersonMessageId: newestPerson?.message_id ?? null,
      blockingReturnedMessageId: blocking?.message_id ?? null,
      resumeAvailable: blocking !== undefined,
      paused: queue.paused === 1,
    },
    newestPersonChannelId: newestPerson?.channel_id ?? null,
    blockingChannelId: blocking?.channel_id ?? null,
  };
}

/**
 * The summary one reader may see: a message id only when its channel is one the reader shares
 * with the agent (I6), `null` otherwise. Counts, the pause state and `resumeAvailable` stay whole:
 * they say how much is waiting, never from whom or where.
 */
export function summaryForReader(
  facts: QueueSummaryFacts,
  canSee: (channelId: string) => boolean,
): QueueSummary {
  const visible = (channelId: string | null) => channelId !== null && canSee(channelId);
  return {
    ...facts.summary,
    newestPersonMessageId: visible(facts.newestPersonChannelId) ? facts.summary.newestPersonMessageId : null,
    blockingReturnedMessageId: visible(facts.blockingChannelId)
      ? facts.summary.blockingReturnedMessageId
      : null,
  };
}

/**
 * The whole summary, every id included: for the agent's own processes (drivers, tests). A
 * reader on any surface gets {@link queueSummaryFor}.
 */
export async function queueSummary(db: Db, agent: Principal): Promise<QueueSummary> {
  return (await loadQueueSummary(db, agent)).summary;
}

/** The summary for a caller who passed the queue access check (`access.ts`). */
export async function queueSummaryFor(db: Db, access: QueueAccess): Promise<QueueSummary> {
  const facts = await loadQueueSummary(db, access.agent);
  return summaryForReader(facts, (channelId) => access.channelIds.includes(channelId));
}

/** {@link queueSummaryFor} over the host's own handle: what a surface calls. */
export function readQueueSummary(ctx: HostContext, access: QueueAccess): Promise<QueueSummary> {
  return queueSummaryFor(ctx.store.db, access);
}

/** The `queue.summary` reply: the summary this reader may see and the agent's presence (host/identity/presence.ts). */
export async function readQueueSummaryWithPresence(
  ctx: HostContext,
  access: QueueAccess,
): Promise<QueueSummary & { presence: AgentPresence }> {
  const summary = await readQueueSummary(ctx, access);
  return { ...summary, presence: await agentPresence(ctx.store.db, access.agent.id) };
}

/**
 * The `queue.summary` reply: {@link readQueueSummaryWithPresence} and whether this reader may pause
 * or resume the whole queue (access.ts {@link mayManageAgent}; the page shows those buttons only then).
 */
export async function readQueueSummaryReply(
  ctx: HostContext,
  caller: Principal,
  access: QueueAccess,
): Promise<QueueSummary & { presence: AgentPresence; canPause: boolean }> {
  const canPause = await mayManageAgent(ctx.store.db, caller, access.agent);
  return { ...(await readQueueSummaryWithPresence(ctx, access)), canPause };
}

/**
 * The summary after a whole-queue pause or resume: the owner or a manager may share no channel with
 * the agent, so no queue access is required (the right was checked) and only the ids of channels
 * caller and agent share show.
 */
export async function readPauserSummary(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
): Promise<QueueSummary> {
  const agent = await resolveAgent(ctx, agentName);
  return readQueueSummary(ctx, await pauserView(ctx.store.db, caller, agent));
}

/** A driver's view of its own queue: the whole summary, and whether it may dispatch now. */
export async function dispatchState(
  ctx: HostContext,
  agent: Principal,
): Promise<{ summary: QueueSummary; deliverable: boolean }> {
  const summary = await queueSummary(ctx.store.db, agent);
  return { summary, deliverable: await isDeliverable(ctx.store.db, agent) };
}

async function requireQueue(db: Db, agent: Principal): Promise<QueueRow> {
  const queue = await findQueue(db, agent.id);
  if (!queue) throw new SluiceError('not_found', `${agent.name} has no queue`);
  return queue;
}

/**
 * Whether a driver may dispatch now: not paused and no blocking returned card. A returned card of a
 * channel the agent left blocks nothing (it cannot be read or resumed) until the agent rejoins.
 */
export async function isDeliverable(db: Db, agent: Principal): Promise<boolean> {
  const queue = await requireQueue(db, agent);
  if (queue.paused !== 0) return false;
  return queue.returned === 0 || (await firstReadableInState(db, agent.id, 'returned')) === undefined;
}

export async function pauseQueue(
  ctx: HostContext,
  actor: Principal,
  agentName: string,
  reason?: string,
): Promise<void> {
  requireWellFormed('reason', reason);
  const agent = await resolveAgent(ctx, agentName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    await requireAgentManager(trx, actor, agent, 'pause its queue');
    await setPaused(trx, agent.id, true, reason === undefined ? null : sliceWhole(reason, 500));
    await appendEvent(trx, { kind: 'queue.changed', agent_id: agent.id, created_at: at });
  });
  announceCommit(ctx);
}

/**
 * Resumes: with a message id, a returned card goes back to waiting (and, being oldest, is
 * delivered first; queue access suffices); without one, a paused queue is unpaused (the agent,
 * the owner or a manager only, as for pausing).
 */
export async function resumeQueue(
  ctx: HostContext,
  actor: Principal,
  agentName: string,
  messageId?: string,
): Promise<void> {
  const agent = await resolveAgent(ctx, agentName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    if (messageId === undefined) {
      // The whole queue: the same right as pausing it (access.ts mayManageAgent).
      await requireAgentManager(trx, actor, agent, 'resume its queue');
      await setPaused(trx, agent.id, false, null);
      await appendEvent(trx, { kind: 'queue.changed', agent_id: agent.id, created_at: at });
      return;
    }
    const access = await checkQueueAccess(trx, actor, agent);
    const { entry } = await cardFor(trx, access, messageId);
    if (entry.state !== 'returned')
      throw new SluiceError('conflict', `message ${messageId} is ${entry.state}, not returned`);
    await transitionEntry(trx, entry, 'waiting', at);
  });
  announceCommit(ctx);
}

/** The sender, or a person who may steer the queue, takes a pending message back. */
export async function withdrawMessage(
  ctx: HostContext,
  actor: Principal,
  agentName: string,
  messageId: string,
): Promise<void> {
  const agent = await resolveAgent(ctx, agentName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    const access = await checkQueueAccess(trx, actor, agent);
    const { entry, message } = await cardFor(trx, access, messageId);
    if (!canWithdraw(actor, message.author_id)) {
      throw new SluiceError('denied', 'only the sender or a person may withdraw a message');
    }
    if (!isPendingState(entry.state)) {
      throw new SluiceError('conflict', `message ${messageId} is already ${entry.state}`);
    }
    await transitionEntry(trx, entry, 'withdrawn', at);
  });
  announceCommit(ctx);
}

/** Edits a queued message's text (author only); pending copies pick up the new size. */
export async function editQueuedMessage(
  ctx: HostContext,
  actor: Principal,
  agentName: string,
  messageId: string,
  body: string,
): Promise<{ message_id: string; revision: number }> {
  const access = await requireQueueAccess(ctx, actor, agentName);
  await cardFor(ctx.store.db, access, messageId);
  // editMessage checks authorship and membership again before it writes.
  return editMessage(ctx, actor, messageId, { body });
}

/** A message in the agent's queue, from a channel the caller shares with the agent. */
async function cardFor(db: Db, access: QueueAccess, messageId: string) {
  const message = typeof messageId === 'string' ? await findMessageById(db, messageId) : undefined;
  const entry = message ? await findInboxEntry(db, access.agent.id, message.seq) : undefined;
  if (!message || !entry)
    throw new SluiceError('not_found', `no message ${quoteInput(messageId)} in ${access.agent.name}'s queue`);
  requireSharedChannel(access, message.channel_id);
  return { entry, message };
}
