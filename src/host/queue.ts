import { SluiceError } from '../core/errors.js';
import { isActiveMember } from '../store/ops/channels.js';
import { appendEvent } from '../store/ops/events.js';
import { findInboxEntry, firstPositionInState } from '../store/ops/inbox.js';
import { findMessageById } from '../store/ops/messages.js';
import { findQueue, type QueueRow, setPaused } from '../store/ops/queues.js';
import type { Db } from '../store/store.js';
import { announceCommit, type HostContext, nowIso } from './context.js';
import { transitionEntry } from './inbox.js';
import { editMessage } from './messages.js';
import { type Principal, resolveAgent } from './principals.js';

export interface QueueSummary {
  agent: string;
  generation: string;
  revision: number;
  total: number;
  counts: { person: number; agent: number; unknown: number };
  newestPersonMessageId: string | null;
  blockingReturnedMessageId: string | null;
  resumeAvailable: boolean;
  paused: boolean;
}

/**
 * The queue summary from maintained counters plus two index probes: constant work whatever the
 * queue length, and never a body.
 */
export async function queueSummary(db: Db, agent: Principal): Promise<QueueSummary> {
  const queue = await requireQueue(db, agent);
  const newestPerson = await db
    .selectFrom('inbox')
    .select('message_id')
    .where('agent_id', '=', agent.id)
    .where('source', '=', 'person')
    .where('state', 'in', ['waiting', 'returned'])
    .orderBy('position', 'desc')
    .limit(1)
    .executeTakeFirst();
  const blocking = await firstPositionInState(db, agent.id, 'returned');
  return {
    agent: agent.name,
    generation: queue.generation,
    revision: queue.revision,
    total: queue.waiting + queue.returned,
    counts: { person: queue.pending_person, agent: queue.pending_agent, unknown: queue.pending_unknown },
    newestPersonMessageId: newestPerson?.message_id ?? null,
    blockingReturnedMessageId: blocking?.message_id ?? null,
    resumeAvailable: blocking !== undefined,
    paused: queue.paused === 1,
  };
}

async function requireQueue(db: Db, agent: Principal): Promise<QueueRow> {
  const queue = await findQueue(db, agent.id);
  if (!queue) throw new SluiceError('not_found', `${agent.name} has no queue`);
  return queue;
}

/** Whether a driver may dispatch now: not paused and no blocking returned card. */
export async function isDeliverable(db: Db, agent: Principal): Promise<boolean> {
  const queue = await requireQueue(db, agent);
  return queue.paused === 0 && queue.returned === 0;
}

/**
 * Who may steer an agent's queue: the agent itself, or a person who shares a channel with the
 * message in question (or, for pause/resume of the whole queue, any person).
 */
function requireSteward(actor: Principal, agent: Principal): void {
  if (actor.id !== agent.id && actor.kind !== 'person') {
    throw new SluiceError('denied', `only ${agent.name} or a person may steer ${agent.name}'s queue`);
  }
}

export async function pauseQueue(
  ctx: HostContext,
  actor: Principal,
  agentName: string,
  reason?: string,
): Promise<void> {
  const agent = await resolveAgent(ctx, agentName);
  requireSteward(actor, agent);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    await setPaused(trx, agent.id, true, reason?.slice(0, 500) ?? null);
    await appendEvent(trx, { kind: 'queue.changed', agent_id: agent.id, created_at: at });
  });
  announceCommit(ctx);
}

/**
 * Resumes: with a message id, a returned card goes back to waiting (and, being oldest, is
 * delivered first); without one, a paused queue is unpaused.
 */
export async function resumeQueue(
  ctx: HostContext,
  actor: Principal,
  agentName: string,
  messageId?: string,
): Promise<void> {
  const agent = await resolveAgent(ctx, agentName);
  requireSteward(actor, agent);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    if (messageId === undefined) {
      await setPaused(trx, agent.id, false, null);
      await appendEvent(trx, { kind: 'queue.changed', agent_id: agent.id, created_at: at });
      return;
    }
    const entry = await entryFor(trx, actor, agent, messageId);
    if (entry.state !== 'returned')
      throw new SluiceError('conflict', `message ${messageId} is ${entry.state}, not returned`);
    await transitionEntry(trx, entry, 'waiting', at);
  });
  announceCommit(ctx);
}

/** The sender (or a person in the channel) takes a pending message back. */
export async function withdrawMessage(
  ctx: HostContext,
  actor: Principal,
  agentName: string,
  messageId: string,
): Promise<void> {
  const agent = await resolveAgent(ctx, agentName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    const entry = await entryFor(trx, actor, agent, messageId);
    const message = await findMessageById(trx, messageId);
    if (message?.author_id !== actor.id && actor.kind !== 'person') {
      throw new SluiceError('denied', 'only the sender or a person may withdraw a message');
    }
    if (entry.state !== 'waiting' && entry.state !== 'returned') {
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
  const agent = await resolveAgent(ctx, agentName);
  await entryFor(ctx.store.db, actor, agent, messageId);
  return editMessage(ctx, actor, messageId, { body });
}

async function entryFor(db: Db, actor: Principal, agent: Principal, messageId: string) {
  const message = typeof messageId === 'string' ? await findMessageById(db, messageId) : undefined;
  const entry = message ? await findInboxEntry(db, agent.id, message.seq) : undefined;
  if (!message || !entry)
    throw new SluiceError(
      'not_found',
      `no message ${String(messageId).slice(0, 80)} in ${agent.name}'s queue`,
    );
  if (actor.id !== agent.id && !(await isActiveMember(db, message.channel_id, actor.id))) {
    throw new SluiceError('not_member', 'you are not a member of that message’s channel');
  }
  return entry;
}
