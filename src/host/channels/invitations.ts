import { decodeCursor, encodeCursor } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import type { InvitationPage, InvitationSummary } from '../../core/wire/index.js';
import { type ChannelRow, isActiveMember, upsertMembership } from '../../store/ops/channels.js';
import { appendEvent } from '../../store/ops/events.js';
import {
  blocksInvitationsFrom,
  deleteInvitationBlock,
  insertInvitationBlock,
  listInvitationBlocks,
} from '../../store/ops/invitation-blocks.js';
import {
  countInvitationsFrom,
  countPendingInvitations,
  deleteInvitation,
  deleteInvitationsFromTo,
  findInvitation,
  insertInvitation,
  listInvitationsPageOf,
} from '../../store/ops/invitations.js';
import type { Db } from '../../store/store.js';
import { joinsDirectly, requireAgentAdder, requireBlockable } from '../identity/access.js';
import { announceCommit, type HostContext, type HostLimits, nowIso } from '../identity/context.js';
import { type Principal, resolvePrincipal } from '../identity/principals.js';
import { channelNotFound, describeChannel, findChannelRef } from './channel-refs.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { InvitationPage, InvitationSummary };

// Consent before membership (docs/security.md, "Consent"): a person named in a group, or added
// to one, is invited and joins only by accepting; they may decline, and block an inviter, whose
// invitations are then dropped without the inviter being told.

/** What a create or add did for each named principal. */
export interface MembershipChange {
  /** Joined now (the caller, agents, persons the owner adds). */
  joined: string[];
  /** Persons invited: they join when they accept (`channel.accept`). */
  invited: string[];
}

/**
 * Inside a write: the member joins now ({@link joinsDirectly}) or is invited. An invitation the
 * member blocks is dropped, yet reported as `invited` (the inviter is not told of the block).
 * Over a pending-invitation cap, or an agent the actor does not manage ({@link requireAgentAdder}),
 * `denied` and nothing changes.
 */
export async function admitOrInvite(
  trx: Db,
  limits: Pick<HostLimits, 'maxInvitationsPerInvitee' | 'maxPendingInvitationsPerInviter'>,
  channel: ChannelRow,
  actor: Principal,
  member: Principal,
  at: string,
  done: MembershipChange,
): Promise<void> {
  if (member.kind === 'agent' && member.id !== actor.id) await requireAgentAdder(trx, actor, member);
  if (joinsDirectly(actor, member)) {
    await upsertMembership(trx, channel.id, member.id, at);
    // Joined: an earlier invitation is moot.
    if (await deleteInvitation(trx, channel.id, member.id)) await invitationsChanged(trx, member, at);
    done.joined.push(member.name);
    return;
  }
  if (await isActiveMember(trx, channel.id, member.id)) return;
  done.invited.push(member.name);
  if (await findInvitation(trx, channel.id, member.id)) return;
  if (await blocksInvitationsFrom(trx, member.id, actor.id)) return;
  if ((await countPendingInvitations(trx, member.id, actor.id)) >= limits.maxInvitationsPerInvitee) {
    throw new SluiceError(
      'denied',
      `${member.name} has ${limits.maxInvitationsPerInvitee} invitations from you still unanswered; nothing was changed`,
    );
  }
  if ((await countInvitationsFrom(trx, actor.id)) >= limits.maxPendingInvitationsPerInviter) {
    throw new SluiceError(
      'denied',
      `you have ${limits.maxPendingInvitationsPerInviter} invitations still unanswered; withdraw some (sluice channel remove) or wait; nothing was changed`,
    );
  }
  await insertInvitation(trx, {
    channel_id: channel.id,
    principal_id: member.id,
    invited_by: actor.id,
    created_at: at,
  });
  await invitationsChanged(trx, member, at);
}

/** The event that tells the invitee's open pages to re-read their invitations (`invitations.changed`). */
export async function invitationsChanged(trx: Db, invitee: Pick<Principal, 'id'>, at: string): Promise<void> {
  await appendEvent(trx, { kind: 'invitation.changed', agent_id: invitee.id, created_at: at });
}

const DEFAULT_INVITATION_PAGE = 50;
const MAX_INVITATION_PAGE = 200;

const invitationBinding = (actor: Principal) => ({
  caller: actor.id,
  filter: 'channel.invitations',
  target: 'invitations',
});

/** One page of the caller's pending invitations, in channel-name order. */
export async function listInvitationsPage(
  ctx: HostContext,
  actor: Principal,
  params: { cursor?: string | undefined; limit?: number | undefined } = {},
): Promise<InvitationPage> {
  const limit = params.limit ?? DEFAULT_INVITATION_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_INVITATION_PAGE) {
    throw new SluiceError('invalid_params', `limit must be an integer from 1 to ${MAX_INVITATION_PAGE}`);
  }
  let afterName: string | undefined;
  if (params.cursor !== undefined) {
    const payload = decodeCursor(ctx.cursorSecret, invitationBinding(actor), params.cursor);
    if (typeof payload.after !== 'string')
      throw new SluiceError('invalid_cursor', 'invalid cursor: unexpected payload');
    afterName = payload.after;
  }
  const rows = await listInvitationsPageOf(ctx.store.db, actor.id, { afterName, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    invitations: page.map((r) => ({
      channel: { id: r.channel.id, name: r.channel.name, kind: r.channel.kind },
      invitedBy: r.invitedBy,
      createdAt: r.createdAt,
    })),
    nextCursor:
      rows.length > limit && last
        ? encodeCursor(ctx.cursorSecret, invitationBinding(actor), { after: last.channel.name })
        : null,
  };
}

/** Every pending invitation of the caller (the CLI lists them all). */
export async function listAllInvitations(ctx: HostContext, actor: Principal): Promise<InvitationSummary[]> {
  const out: InvitationSummary[] = [];
  let cursor: string | undefined;
  do {
    const page = await listInvitationsPage(ctx, actor, { cursor, limit: MAX_INVITATION_PAGE });
    out.push(...page.invitations);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}

/**
 * `not_found` for an invitation the caller does not have. Named by id, a channel the caller is not
 * in answers as an unknown id would: an id must not tell an outsider the channel's name or that it
 * exists (docs/security.md). Named by `#name`, or to a member, the channel is described.
 */
async function noInvitation(
  trx: Db,
  actor: Principal,
  channel: ChannelRow,
  channelRef: string,
): Promise<SluiceError> {
  const named = channelRef.startsWith('#') || (await isActiveMember(trx, channel.id, actor.id));
  if (!named) return channelNotFound(trx, actor, channelRef);
  return new SluiceError('not_found', `you have no invitation to ${describeChannel(channel)}`);
}

/** Accepts an invitation: the caller joins the channel now. Only the invitee's own invitation counts. */
export async function acceptInvitation(
  ctx: HostContext,
  actor: Principal,
  channelRef: string,
): Promise<ChannelRow> {
  const at = nowIso(ctx);
  const channel = await ctx.store.transaction(async (trx) => {
    const channel = await findChannelRef(trx, actor, channelRef);
    if (!(await deleteInvitation(trx, channel.id, actor.id)))
      throw await noInvitation(trx, actor, channel, channelRef);
    await upsertMembership(trx, channel.id, actor.id, at);
    await appendEvent(trx, { kind: 'channel.members', channel_id: channel.id, created_at: at });
    await invitationsChanged(trx, actor, at);
    return channel;
  });
  announceCommit(ctx);
  return channel;
}

/** Declines an invitation: it is gone, and nothing else changes. */
export async function declineInvitation(
  ctx: HostContext,
  actor: Principal,
  channelRef: string,
): Promise<void> {
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    const channel = await findChannelRef(trx, actor, channelRef);
    if (!(await deleteInvitation(trx, channel.id, actor.id)))
      throw await noInvitation(trx, actor, channel, channelRef);
    await invitationsChanged(trx, actor, at);
  });
  announceCommit(ctx);
}

/**
 * The caller refuses invitations from `name` from now on; the ones already pending from them are
 * dropped. Blocking twice is the same as once. The blocked principal is never told.
 */
export async function blockInviter(
  ctx: HostContext,
  actor: Principal,
  name: string,
): Promise<{ name: string; blocked: true; dropped: number }> {
  const target = await resolvePrincipal(ctx, name);
  requireBlockable(actor, target);
  const at = nowIso(ctx);
  const dropped = await ctx.store.transaction(async (trx) => {
    await insertInvitationBlock(trx, { principal_id: actor.id, blocked_id: target.id, created_at: at });
    const n = await deleteInvitationsFromTo(trx, actor.id, target.id);
    if (n > 0) await invitationsChanged(trx, actor, at);
    return n;
  });
  announceCommit(ctx);
  return { name: target.name, blocked: true, dropped };
}

/** Lifts a block: `name`'s invitations reach the caller again. False when there was none. */
export async function unblockInviter(
  ctx: HostContext,
  actor: Principal,
  name: string,
): Promise<{ name: string; unblocked: boolean }> {
  const target = await resolvePrincipal(ctx, name);
  const unblocked = await ctx.store.transaction((trx) => deleteInvitationBlock(trx, actor.id, target.id));
  return { name: target.name, unblocked };
}

/** Most blocks a list shows: far above what anyone keeps, a bound on the reply. */
export const MAX_BLOCKS_LISTED = 1000;

/** Whom the caller blocks, by name. */
export async function listBlockedInviters(
  ctx: HostContext,
  actor: Principal,
): Promise<{ name: string; kind: 'person' | 'agent'; created_at: string }[]> {
  return listInvitationBlocks(ctx.store.db, actor.id, MAX_BLOCKS_LISTED);
}
