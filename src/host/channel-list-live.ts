import { findChannelById, listActiveChannelIds, listActiveMembersBounded } from '../store/ops/channels.js';
import type { Db } from '../store/store.js';
import { type ChannelSummary, LIST_MEMBERS_SHOWN } from './channels.js';
import { unreadCounts } from './read-marks.js';

/** A `channel.list` row with the caller's unread count (read-marks.ts: capped, "this many or more"). */
export interface ChannelListEntry extends ChannelSummary {
  unread: number;
}

/**
 * The channel-list row of one channel as `principalId` sees it, for live channel-list
 * notifications; null when the channel is gone. The caller has checked the membership.
 */
export async function channelListEntry(
  db: Db,
  channelId: string,
  principalId: string,
): Promise<ChannelListEntry | null> {
  const channel = await findChannelById(db, channelId);
  if (!channel) return null;
  const { members, count } = await listActiveMembersBounded(db, channel.id, LIST_MEMBERS_SHOWN);
  const unread = (await unreadCounts(db, principalId, [channel.id])).get(channel.id) ?? 0;
  return { id: channel.id, name: channel.name, kind: channel.kind, members, memberCount: count, unread };
}

/** Ids of the channels a principal is in now (what a channel-list subscriber starts from). */
export async function channelIdsOf(db: Db, principalId: string): Promise<string[]> {
  return listActiveChannelIds(db, principalId);
}
