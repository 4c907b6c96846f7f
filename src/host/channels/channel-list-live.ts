import { findChannelById, listActiveMembersBounded } from '../../store/ops/channels.js';
import type { Db } from '../../store/store.js';
import { type ChannelSummary, LIST_MEMBERS_SHOWN } from './channels.js';

/**
 * The channel-list row of one channel without the reader's unread count, for live channel-list
 * notifications: the same for every member, so a change that concerns many open pages is read
 * once (the live hub shares it) and only `unread` per reader. Null when the channel is gone.
 * The caller has checked the membership.
 */
export async function channelListRow(db: Db, channelId: string): Promise<ChannelSummary | null> {
  const channel = await findChannelById(db, channelId);
  if (!channel) return null;
  const { members, count } = await listActiveMembersBounded(db, channel.id, LIST_MEMBERS_SHOWN);
  return { id: channel.id, name: channel.name, kind: channel.kind, members, memberCount: count };
}
