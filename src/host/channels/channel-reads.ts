import { type ActiveMember, listActiveMembers } from '../../store/ops/channels.js';
import { listChannelHistory } from '../../store/ops/messages.js';
import { requireMember } from '../identity/access.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { loadProjections } from '../messages/messages.js';
import type { MessageProjection } from '../messages/projection.js';
import { unreadCounts } from './read-marks.js';

/** Who is in a channel now; the caller must be a member (I6). */
export async function channelMembers(
  ctx: HostContext,
  actor: Principal,
  channelId: string,
): Promise<ActiveMember[]> {
  await requireMember(ctx.store.db, channelId, actor.id);
  return listActiveMembers(ctx.store.db, channelId);
}

/** The newest `limit` messages of a channel as projections, oldest first; the caller must be a member. */
export async function recentProjections(
  ctx: HostContext,
  actor: Principal,
  channelId: string,
  limit: number,
): Promise<MessageProjection[]> {
  await requireMember(ctx.store.db, channelId, actor.id);
  const rows = (await listChannelHistory(ctx.store.db, channelId, { limit })).reverse();
  return loadProjections(ctx.store.db, rows);
}

/** Unread counts of the caller's own read marks in these channels (host/channels/read-marks.ts). */
export function unreadCountsOf(
  ctx: HostContext,
  actor: Principal,
  channelIds: readonly string[],
): Promise<Map<string, number>> {
  return unreadCounts(ctx.store.db, actor.id, channelIds);
}
