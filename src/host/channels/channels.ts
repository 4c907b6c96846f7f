import { decodeCursor, encodeCursor, encodedCursorLength } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import type { ChannelPage, ChannelSummary } from '../../core/wire/index.js';
import { listMembersOfChannels } from '../../store/ops/channel-activity.js';
import {
  type ChannelRow,
  findChannelByDmKey,
  findChannelById,
  findChannelByName,
  insertChannel,
  listChannelsPageOf,
  markMembershipLeft,
  upsertMembership,
} from '../../store/ops/channels.js';
import { appendEvent } from '../../store/ops/events.js';
import { deleteInvitation } from '../../store/ops/invitations.js';
import {
  canRemoveMember,
  requireAgentAdder,
  requireMember,
  requireMemberChannel,
} from '../identity/access.js';
import { announceCommit, type HostContext, newId, nowIso } from '../identity/context.js';
import { type Principal, resolvePrincipal, validateName } from '../identity/principals.js';
import { channelNotFound, describeChannel as describe, findChannelRef } from './channel-refs.js';
import { admitOrInvite, invitationsChanged, type MembershipChange } from './invitations.js';
import { pageEnvelopeBytes } from './page-budget.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { ChannelPage, ChannelSummary };

export type Channel = ChannelRow;

export { requireMember } from '../identity/access.js';

/** Members shown per channel in a list (the rest are counted in `memberCount`). */
export const LIST_MEMBERS_SHOWN = 50;
export const DEFAULT_CHANNEL_PAGE = 50;
export const MAX_CHANNEL_PAGE = 200;

export type { MembershipChange } from './invitations.js';

/**
 * Creates a group channel. The creator and any agents named join now (an agent only when the
 * creator manages it, else `denied`); other persons are invited and join only when they accept,
 * unless the owner creates it (docs/security.md, "Consent").
 */
export async function createChannel(
  ctx: HostContext,
  actor: Principal,
  input: { name: string; members: readonly string[] },
): Promise<Channel & MembershipChange> {
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
  const others = uniqueOthers(actor, members);
  const change = await ctx.store.transaction(async (trx) => {
    if (await findChannelByName(trx, name))
      throw new SluiceError('conflict', `channel #${name} already exists`);
    // Every agent named is the caller's to add, checked before the first write: a refusal then
    // leaves even PostgreSQL's sequences untouched.
    for (const member of others) if (member.kind === 'agent') await requireAgentAdder(trx, actor, member);
    await insertChannel(trx, channel);
    await upsertMembership(trx, channel.id, actor.id, at);
    const done: MembershipChange = { joined: [actor.name], invited: [] };
    for (const member of others) {
      await admitOrInvite(trx, ctx.limits, channel, actor, member, at, done);
    }
    await appendEvent(trx, { kind: 'channel.created', channel_id: channel.id, created_at: at });
    return done;
  });
  announceCommit(ctx);
  return { ...channel, ...change };
}

function uniqueOthers(actor: Principal, members: readonly Principal[]): Principal[] {
  const seen = new Set([actor.id]);
  return members.filter((m) => !seen.has(m.id) && seen.add(m.id));
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
    if (!channel) throw await channelNotFound(ctx.store.db, actor, target);
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
  return requireMemberChannel(ctx.store.db, actor, channelId);
}

const channelListBinding = (actor: Principal) => ({
  caller: actor.id,
  filter: 'channel.list',
  target: 'memberships',
});

function pageSize(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_CHANNEL_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_CHANNEL_PAGE) {
    throw new SluiceError('invalid_params', `limit must be an integer from 1 to ${MAX_CHANNEL_PAGE}`);
  }
  return limit;
}

/** The reply budget of a channel page; `rowExtraBytes` is what the caller adds to each row after. */
export interface ChannelPageBudget {
  bytes: number;
  rowExtraBytes?: number;
}

/**
 * One page of the caller's channels in name order: at most `limit` of them, and only as many as
 * keep the reply's JSON within `budget.bytes` counting `budget.rowExtraBytes` more for each row
 * listed (at least one, or `too_large`). The cursor is bound to the caller and carries the last
 * name listed (a keyset: no offset to grow).
 */
export async function listChannelsPage(
  ctx: HostContext,
  actor: Principal,
  params: { cursor?: string | undefined; limit?: number | undefined } = {},
  budget: ChannelPageBudget = { bytes: Number.POSITIVE_INFINITY },
): Promise<ChannelPage> {
  const limit = pageSize(params.limit);
  let afterName: string | undefined;
  if (params.cursor !== undefined) {
    const payload = decodeCursor(ctx.cursorSecret, channelListBinding(actor), params.cursor);
    if (typeof payload.after !== 'string')
      throw new SluiceError('invalid_cursor', 'invalid cursor: unexpected payload');
    afterName = payload.after;
  }
  const rows = await listChannelsPageOf(ctx.store.db, actor.id, { afterName, limit: limit + 1 });
  const listed = rows.slice(0, limit);
  const shown = await listMembersOfChannels(
    ctx.store.db,
    listed.map((c) => c.id),
    LIST_MEMBERS_SHOWN,
  );
  const channels: ChannelSummary[] = [];
  let rowsBytes = 0;
  for (const [i, c] of listed.entries()) {
    const { members, count } = shown.get(c.id) ?? { members: [], count: 0 };
    const summary: ChannelSummary = { id: c.id, name: c.name, kind: c.kind, members, memberCount: count };
    // Room for the cursor this row would end the page with, measured without signing it.
    const cursor = i + 1 < rows.length ? encodedCursorLength({ after: c.name }) : null;
    const bytes =
      rowsBytes +
      (channels.length ? 1 : 0) +
      utf8Length(JSON.stringify(summary)) +
      (budget.rowExtraBytes ?? 0);
    if (pageEnvelopeBytes(cursor) + bytes > budget.bytes) {
      if (channels.length === 0)
        throw new SluiceError('too_large', 'the reply budget cannot hold one channel');
      break;
    }
    channels.push(summary);
    rowsBytes = bytes;
  }
  const last = channels[channels.length - 1];
  const more = last !== undefined && rows.length > channels.length;
  return {
    channels,
    nextCursor: more ? encodeCursor(ctx.cursorSecret, channelListBinding(actor), { after: last.name }) : null,
  };
}

/** Every channel of the caller, page by page (the CLI lists them all). */
export async function listAllChannels(ctx: HostContext, actor: Principal): Promise<ChannelSummary[]> {
  const out: ChannelSummary[] = [];
  let cursor: string | undefined;
  do {
    const page = await listChannelsPage(ctx, actor, { cursor, limit: MAX_CHANNEL_PAGE });
    out.push(...page.channels);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}

/**
 * Adds a principal to a group the caller belongs to: an agent the caller manages (or the caller)
 * joins now, another person is invited. Adding someone already in is a no-op. `channelRef` is an id or `#name`;
 * the channel it named comes back with the change, so a caller never looks it up again by a reference
 * that may not be an id (the change is committed by then).
 */
export async function addMember(
  ctx: HostContext,
  actor: Principal,
  channelRef: string,
  memberName: string,
): Promise<MembershipChange & { channel: Channel }> {
  const member = await resolvePrincipal(ctx, memberName);
  const at = nowIso(ctx);
  const change = await ctx.store.transaction(async (trx) => {
    const found = await findChannelRef(trx, actor, channelRef);
    const channel = await requireMemberChannel(trx, actor, found.id);
    if (channel.kind === 'dm')
      throw new SluiceError('invalid_params', 'members cannot be added to a DM channel');
    const done: MembershipChange = { joined: [], invited: [] };
    await admitOrInvite(trx, ctx.limits, channel, actor, member, at, done);
    await appendEvent(trx, { kind: 'channel.members', channel_id: channel.id, created_at: at });
    return { ...done, channel };
  });
  announceCommit(ctx);
  return change;
}

/**
 * The caller leaves a group. Nothing is consumed (I3): an agent's pending entries from the
 * channel stay pending, but are not listed, delivered or readable until it rejoins (I6). A DM
 * cannot be left (it is the one way two principals reach each other).
 */
export async function leaveChannel(ctx: HostContext, actor: Principal, channelRef: string): Promise<Channel> {
  const at = nowIso(ctx);
  const channel = await ctx.store.transaction(async (trx) => {
    const channel = await findChannelRef(trx, actor, channelRef);
    await requireMember(trx, channel.id, actor.id);
    if (channel.kind === 'dm') throw new SluiceError('invalid_params', 'a DM channel cannot be left');
    await markMembershipLeft(trx, channel.id, actor.id, at);
    await appendEvent(trx, { kind: 'channel.members', channel_id: channel.id, created_at: at });
    return channel;
  });
  announceCommit(ctx);
  return channel;
}

/**
 * Removes a member (or withdraws a pending invitation): the channel's creator may remove anyone,
 * anyone may remove themselves. Their reads are refused from now on (I6); their inbox entries
 * stay pending.
 */
export async function removeMember(
  ctx: HostContext,
  actor: Principal,
  channelRef: string,
  memberName: string,
): Promise<void> {
  const member = await resolvePrincipal(ctx, memberName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    const found = await findChannelRef(trx, actor, channelRef);
    const channel = await requireMemberChannel(trx, actor, found.id);
    if (!canRemoveMember(actor, channel, member)) {
      throw new SluiceError(
        'denied',
        channel.kind === 'dm'
          ? 'nobody can be removed from a DM channel'
          : `only the creator of ${describe(channel)} may remove others`,
      );
    }
    const left = await markMembershipLeft(trx, channel.id, member.id, at);
    const withdrawn = !left && (await deleteInvitation(trx, channel.id, member.id));
    if (withdrawn) await invitationsChanged(trx, member, at);
    if (!left && !withdrawn)
      throw new SluiceError('not_found', `${memberName} is not a member of ${describe(channel)}`);
    await appendEvent(trx, { kind: 'channel.members', channel_id: channel.id, created_at: at });
  });
  announceCommit(ctx);
}
