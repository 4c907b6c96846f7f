import { SluiceError } from '../core/errors.js';
import {
  type ChannelRow,
  findChannelByDmKey,
  findChannelById,
  findChannelByName,
  insertChannel,
  isActiveMember,
  listActiveMembers,
  listChannelsOf,
  markMembershipLeft,
  upsertMembership,
} from '../store/ops/channels.js';
import { appendEvent } from '../store/ops/events.js';
import type { Db } from '../store/store.js';
import { announceCommit, type HostContext, newId, nowIso } from './context.js';
import { type Principal, resolvePrincipal, validateName } from './principals.js';

export type Channel = ChannelRow;

/** Throws `not_member` unless the principal is a current member. Every read path calls this. */
export async function requireMember(db: Db, channelId: string, principalId: string): Promise<void> {
  if (!(await isActiveMember(db, channelId, principalId))) {
    throw new SluiceError('not_member', 'you are not a member of that channel');
  }
}

export async function createChannel(
  ctx: HostContext,
  actor: Principal,
  input: { name: string; members: readonly string[] },
): Promise<Channel> {
  const name = validateName(input.name.replace(/^#/, ''), 'channel name');
  const members: Principal[] = [];
  for (const memberName of input.members) members.push(await resolvePrincipal(ctx, memberName));
  const at = nowIso(ctx);
  const channel: Channel = {
    id: newId(ctx, 'c'),
    name,
    kind: 'group',
    dm_key: null,
    created_at: at,
    created_by: actor.id,
  };
  await ctx.store.transaction(async (trx) => {
    if (await findChannelByName(trx, name))
      throw new SluiceError('conflict', `channel #${name} already exists`);
    await insertChannel(trx, channel);
    for (const id of new Set([actor.id, ...members.map((m) => m.id)]))
      await upsertMembership(trx, channel.id, id, at);
    await appendEvent(trx, { kind: 'channel.created', channel_id: channel.id, created_at: at });
  });
  announceCommit(ctx);
  return channel;
}

/** The two principals of a DM in their stable order, and the channel's unique key. */
function dmPair(a: Principal, b: Principal): { first: Principal; second: Principal; dmKey: string } {
  const [first, second] = [a, b].sort((x, y) => (x.name < y.name ? -1 : 1)) as [Principal, Principal];
  return { first, second, dmKey: `${first.id},${second.id}` };
}

/** The one DM channel between two principals, created on first use. */
export async function ensureDmChannel(ctx: HostContext, a: Principal, b: Principal): Promise<Channel> {
  const { first, second, dmKey } = dmPair(a, b);
  const existing = await findChannelByDmKey(ctx.store.db, dmKey);
  if (existing) return existing;
  const at = nowIso(ctx);
  const channel: Channel = {
    id: newId(ctx, 'c'),
    name: a.id === b.id ? `dm:${first.name}` : `dm:${first.name},${second.name}`,
    kind: 'dm',
    dm_key: dmKey,
    created_at: at,
    created_by: a.id,
  };
  const created = await ctx.store.transaction(async (trx) => {
    const raced = await findChannelByDmKey(trx, dmKey);
    if (raced) return raced;
    await insertChannel(trx, channel);
    for (const id of new Set([first.id, second.id])) await upsertMembership(trx, channel.id, id, at);
    await appendEvent(trx, { kind: 'channel.created', channel_id: channel.id, created_at: at });
    return channel;
  });
  announceCommit(ctx);
  return created;
}

/**
 * Resolves a send target: `#name` (or a channel id) is a group channel the actor must belong to;
 * a principal name is the DM channel with that principal.
 */
export async function resolveTarget(ctx: HostContext, actor: Principal, target: string): Promise<Channel> {
  if (typeof target !== 'string' || target.length === 0) {
    throw new SluiceError('invalid_params', 'a target (#channel or principal name) is required');
  }
  if (target.startsWith('#') || target.startsWith('c_')) {
    const channel = target.startsWith('#')
      ? await findChannelByName(ctx.store.db, target.slice(1))
      : await findChannelById(ctx.store.db, target);
    if (!channel) throw new SluiceError('not_found', `no channel ${JSON.stringify(target).slice(0, 80)}`);
    await requireMember(ctx.store.db, channel.id, actor.id);
    return channel;
  }
  const other = await resolvePrincipal(ctx, target);
  return ensureDmChannel(ctx, actor, other);
}

/**
 * Like `resolveTarget`, but creates nothing: a principal whose DM with the actor does not exist
 * yet gives `undefined`. Lets a send refuse bad input before creating the DM.
 */
export async function peekTarget(
  ctx: HostContext,
  actor: Principal,
  target: string,
): Promise<Channel | undefined> {
  if (
    typeof target !== 'string' ||
    target.length === 0 ||
    target.startsWith('#') ||
    target.startsWith('c_')
  ) {
    return resolveTarget(ctx, actor, target);
  }
  const other = await resolvePrincipal(ctx, target);
  return findChannelByDmKey(ctx.store.db, dmPair(actor, other).dmKey);
}

export async function getChannel(ctx: HostContext, actor: Principal, channelId: string): Promise<Channel> {
  const channel = typeof channelId === 'string' ? await findChannelById(ctx.store.db, channelId) : undefined;
  if (!channel) throw new SluiceError('not_found', 'no such channel');
  await requireMember(ctx.store.db, channel.id, actor.id);
  return channel;
}

export interface ChannelSummary {
  id: string;
  name: string;
  kind: 'dm' | 'group';
  members: { id: string; name: string; kind: 'person' | 'agent' }[];
}

export async function listChannels(ctx: HostContext, actor: Principal): Promise<ChannelSummary[]> {
  const channels = await listChannelsOf(ctx.store.db, actor.id);
  const out: ChannelSummary[] = [];
  for (const c of channels) {
    out.push({ id: c.id, name: c.name, kind: c.kind, members: await listActiveMembers(ctx.store.db, c.id) });
  }
  return out;
}

export async function addMember(
  ctx: HostContext,
  actor: Principal,
  channelId: string,
  memberName: string,
): Promise<void> {
  const channel = await getChannel(ctx, actor, channelId);
  if (channel.kind === 'dm')
    throw new SluiceError('invalid_params', 'members cannot be added to a DM channel');
  const member = await resolvePrincipal(ctx, memberName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    await upsertMembership(trx, channel.id, member.id, at);
    await appendEvent(trx, { kind: 'channel.members', channel_id: channel.id, created_at: at });
  });
  announceCommit(ctx);
}

/** Removes a member; their reads are refused from now on (I6). Their inbox entries stay pending. */
export async function removeMember(
  ctx: HostContext,
  actor: Principal,
  channelId: string,
  memberName: string,
): Promise<void> {
  const channel = await getChannel(ctx, actor, channelId);
  const member = await resolvePrincipal(ctx, memberName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    if (!(await markMembershipLeft(trx, channel.id, member.id, at))) {
      throw new SluiceError('not_found', `${memberName} is not a member of #${channel.name}`);
    }
    await appendEvent(trx, { kind: 'channel.members', channel_id: channel.id, created_at: at });
  });
  announceCommit(ctx);
}
