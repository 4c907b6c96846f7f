import { SluiceError } from '../../core/errors.js';
import { HOST_OWNER_NAME } from '../../core/provenance.js';
import { isAgentManager, listAgentManagerIds } from '../../store/ops/agent-managers.js';
import {
  type ChannelRow,
  findChannelById,
  isActiveMember,
  principalIdsSharingWith,
  sharedChannelIds,
} from '../../store/ops/channels.js';
import { findQueue, type QueueRow } from '../../store/ops/queues.js';
import type { Db } from '../../store/store.js';
import type { HostContext } from './context.js';
import { type Principal, resolveAgent } from './principals.js';

// Who may read or steer what: every rule lives here once, and every surface (CLI, RPC, MCP, live
// pushes) calls it. Checks that guard a write take the transaction's handle, so the right is
// decided inside the transaction, before any change: a refused call changes nothing.
// docs/security.md ("Who may do what") lists each rule and the test that covers it.

type Caller = Pick<Principal, 'id' | 'kind'>;

/**
 * Queue steering and reading (summary, page, read, resuming one card, withdraw, edit): the agent
 * itself, a person who currently shares at least one channel with it, or a person who manages it
 * (its managers and the host owner, {@link mayManageAgent}): who made an agent sees it without
 * having to write to it first. What each sees of the cards is limited to the channels both share
 * ({@link QueueAccess}): a manager in none sees the counts and the state, never a card (I6).
 * Pausing or resuming the whole queue takes a manager. Pure: the caller gives the channels both
 * currently belong to and whether the caller manages the agent.
 */
export function canSteerQueue(
  caller: Caller,
  agent: Pick<Principal, 'id'>,
  shared: readonly string[],
  manages = false,
): boolean {
  return caller.id === agent.id || (caller.kind === 'person' && (shared.length > 0 || manages));
}

/**
 * {@link canSteerQueue} for live pushes, where one query per commit gives every person who may read
 * the queue besides the owner ({@link queueReaderIds}) and each subscriber is checked against it.
 */
export function canWatchQueue(
  caller: Pick<Principal, 'id' | 'kind' | 'name'>,
  agentId: string,
  readers: ReadonlySet<string>,
): boolean {
  return (
    caller.id === agentId || (caller.kind === 'person' && (readers.has(caller.id) || isHostOwner(caller)))
  );
}

/** Who may read an agent's queue, the owner aside: everyone sharing a channel with it, and its managers. */
export async function queueReaderIds(db: Db, agentId: string): Promise<Set<string>> {
  const readers = await principalIdsSharingWith(db, agentId);
  for (const id of await listAgentManagerIds(db, agentId)) readers.add(id);
  return readers;
}

/** What a caller who may use an agent's queue sees of it. */
export interface QueueAccess {
  agent: Principal;
  queue: QueueRow;
  /**
   * Channels where caller and agent are both current members: the only channels whose cards,
   * bodies and message ids the caller sees (I6). For the agent itself, its own current channels.
   */
  channelIds: string[];
}

/** Resolves the agent and checks {@link canSteerQueue} (`denied` otherwise), for reads. */
export async function requireQueueAccess(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
): Promise<QueueAccess> {
  return checkQueueAccess(ctx.store.db, caller, await resolveAgent(ctx, agentName));
}

/**
 * {@link canSteerQueue} on a resolved agent. A write passes its transaction's handle, so the
 * right is decided inside the transaction, before any change.
 */
export async function checkQueueAccess(db: Db, caller: Principal, agent: Principal): Promise<QueueAccess> {
  const channelIds = await sharedChannelIds(db, caller.id, agent.id);
  // The manager probe only when sharing does not already decide it (one indexed read).
  const manages =
    channelIds.length === 0 && caller.kind === 'person' && (await mayManageAgent(db, caller, agent));
  if (!canSteerQueue(caller, agent, channelIds, manages)) {
    throw new SluiceError(
      'denied',
      `only ${agent.name}, its managers, the owner or a person who shares a channel with it may see its queue`,
    );
  }
  const queue = await findQueue(db, agent.id);
  if (!queue) throw new SluiceError('not_found', `${agent.name} has no queue`);
  return { agent, queue, channelIds };
}

/** A card (a message in the agent's queue) is usable only when its channel is one both share. */
export function requireSharedChannel(access: QueueAccess, channelId: string): void {
  if (!access.channelIds.includes(channelId)) {
    throw new SluiceError('not_member', 'you do not share that message’s channel with the agent');
  }
}

/** Throws `not_member` unless the principal is a current member. Every channel read path calls this. */
export async function requireMember(db: Db, channelId: string, principalId: string): Promise<void> {
  if (!(await isActiveMember(db, channelId, principalId))) {
    throw new SluiceError('not_member', 'you are not a member of that channel');
  }
}

/** The channel, if the caller is a current member; `not_found` and `not_member` otherwise. */
export async function requireMemberChannel(db: Db, caller: Caller, channelId: string): Promise<ChannelRow> {
  const channel = typeof channelId === 'string' ? await findChannelById(db, channelId) : undefined;
  if (!channel) throw new SluiceError('not_found', 'no such channel');
  await requireMember(db, channel.id, caller.id);
  return channel;
}

/**
 * Adding someone to a group (any current member may add; an agent only its managers,
 * {@link requireAgentAdder}): the caller and agents join now; a person joins only by accepting an
 * invitation (consent, docs/security.md), unless the owner adds them: the owner administers the
 * host and may act as anyone from the CLI, so an invitation from the owner would be a ritual, not
 * a protection (the person can still leave).
 */
export function joinsDirectly(caller: Pick<Principal, 'id' | 'kind' | 'name'>, member: Caller): boolean {
  return member.id === caller.id || member.kind === 'agent' || isHostOwner(caller);
}

/**
 * Adding an agent to a group (naming it in `channel.create`, or `channel.addMember`): only who may
 * manage it (its managers, the owner, the agent itself; {@link mayManageAgent}). An agent acts for
 * whoever runs it: a group decides whose words it reads and who reads its replies, so that is its
 * managers' choice, as its whole queue is. Everyone else is `denied` with a line that says whom to
 * ask. DMs stay open (a DM adds nobody to a conversation with others). A write passes its
 * transaction, so the right is decided there.
 */
export async function requireAgentAdder(db: Db, caller: Principal, agent: Principal): Promise<void> {
  if (await mayManageAgent(db, caller, agent)) return;
  throw new SluiceError(
    'denied',
    `only the owner or a manager of ${agent.name} may add it to a channel (sluice agent managers ${agent.name} names them); nothing was changed`,
  );
}

/**
 * Blocking a principal's invitations: anyone but themself and the owner (whose adds are not
 * invitations, {@link joinsDirectly}: blocking them would promise what it cannot keep).
 */
export function requireBlockable(
  caller: Pick<Principal, 'id'>,
  target: Pick<Principal, 'id' | 'kind' | 'name'>,
): void {
  if (target.id === caller.id) throw new SluiceError('invalid_params', 'you cannot block yourself');
  if (isHostOwner(target)) {
    throw new SluiceError(
      'invalid_params',
      'the owner adds people directly, not by invitation; leave a channel you do not want instead',
    );
  }
}

/**
 * Removing someone else from a group: only the channel's creator (who set it up), and never
 * from a DM. Anyone may remove themselves (leave).
 */
export function canRemoveMember(
  caller: Caller,
  channel: Pick<ChannelRow, 'kind' | 'created_by'>,
  member: Caller,
): boolean {
  if (channel.kind === 'dm') return false;
  return member.id === caller.id || channel.created_by === caller.id;
}

/** Withdrawing a card: queue access, and the caller sent the message or is a person. */
export function canWithdraw(caller: Caller, authorId: string): boolean {
  return caller.id === authorId || caller.kind === 'person';
}

/** The host owner: the person `init` made (home.ts OWNER_NAME). */
export function isHostOwner(caller: Pick<Principal, 'name' | 'kind'>): boolean {
  return caller.kind === 'person' && caller.name === HOST_OWNER_NAME;
}

/**
 * Pausing or resuming an agent's whole queue, and changing its managers: the agent itself, the
 * host owner, or a person who manages the agent. Sharing a channel is not enough: DMs are open, so
 * anyone can come to share one with any agent (docs/security.md). A write passes its transaction.
 */
export async function mayManageAgent(
  db: Db,
  caller: Principal,
  agent: Pick<Principal, 'id'>,
): Promise<boolean> {
  if (caller.id === agent.id || isHostOwner(caller)) return true;
  return caller.kind === 'person' && (await isAgentManager(db, agent.id, caller.id));
}

/** {@link mayManageAgent}, `denied` otherwise. */
export async function requireAgentManager(
  db: Db,
  caller: Principal,
  agent: Pick<Principal, 'id' | 'name'>,
  what: string,
): Promise<void> {
  if (!(await mayManageAgent(db, caller, agent))) {
    throw new SluiceError(
      'denied',
      `only ${agent.name}, the owner or a manager of ${agent.name} may ${what}`,
    );
  }
}

/**
 * Changing an agent's managers: the owner or a current manager. Not the agent itself: it acts on
 * whatever text it read, so it never hands out rights over itself.
 */
export async function requireManagerChange(db: Db, caller: Principal, agent: Principal): Promise<void> {
  if (caller.id === agent.id)
    throw new SluiceError('denied', `only the owner or a manager of ${agent.name} may change its managers`);
  await requireAgentManager(db, caller, agent, 'change its managers');
}

/**
 * What someone who may pause sees of the queue after pausing or resuming it: the channels caller
 * and agent share (possibly none, then no message id shows), without requiring one.
 */
export async function pauserView(db: Db, caller: Principal, agent: Principal): Promise<QueueAccess> {
  const queue = await findQueue(db, agent.id);
  if (!queue) throw new SluiceError('not_found', `${agent.name} has no queue`);
  return { agent, queue, channelIds: await sharedChannelIds(db, caller.id, agent.id) };
}

/**
 * Administering the host from a device (`principal.addAgent`): only the owner, the person `init`
 * made. Anyone else administers through the CLI, which needs the home (or the database URL).
 */
export function requireHostOwner(caller: Pick<Principal, 'name' | 'kind'>, what: string): void {
  // home.ts OWNER_NAME; not imported, so this module does not pull in the store's openers.
  if (!isHostOwner(caller)) throw new SluiceError('denied', `only the owner may ${what}`);
}

/**
 * Starting, stopping or restarting an agent the host runs, and reading its state and log
 * (host/agents/agent-runs.ts): the host owner or a person who manages the agent. Not the agent itself (it
 * acts on whatever text it read, so it never controls its own process), and sharing a channel is
 * not enough. A write passes its transaction.
 */
export async function requireRunControl(db: Db, caller: Principal, agent: Principal): Promise<void> {
  if (isHostOwner(caller)) return;
  if (caller.kind === 'person' && caller.id !== agent.id && (await isAgentManager(db, agent.id, caller.id)))
    return;
  throw new SluiceError('denied', `only the owner or a manager of ${agent.name} may run, start or stop it`);
}

/**
 * Seeing and deciding an agent's approval requests, and its approval rules and policy
 * (docs/approvals.md): the host owner or a person who manages the agent. Never an agent — not even
 * the one that asked: it acts on whatever text it read, so it never approves its own requests.
 * Sharing a channel is not enough. A write passes its transaction, so the right is decided there.
 */
export async function mayDecideApprovals(
  db: Db,
  caller: Principal,
  agent: Pick<Principal, 'id'>,
): Promise<boolean> {
  if (caller.kind !== 'person' || caller.id === agent.id) return false;
  return isHostOwner(caller) || (await isAgentManager(db, agent.id, caller.id));
}

/** {@link mayDecideApprovals}, `denied` otherwise. */
export async function requireApprovalDecider(
  db: Db,
  caller: Principal,
  agent: Pick<Principal, 'id' | 'name'>,
): Promise<void> {
  if (!(await mayDecideApprovals(db, caller, agent)))
    throw new SluiceError(
      'denied',
      `only the owner or a manager of ${agent.name} may see or decide its approval requests`,
    );
}
