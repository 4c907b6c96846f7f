import { findChannelById } from '../../store/ops/channels.js';
import { findInboxEntry } from '../../store/ops/inbox.js';
import { findMessageById } from '../../store/ops/messages.js';
import type { InboxState } from '../../store/schema.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { displayChannel } from '../queue/inbox.js';
import type { MessageProjection } from './projection.js';

/** Where a message the reader already read sits: its channel's display name and the reader's inbox state. */
export interface MessagePlace {
  channelName: string;
  /** The reader's inbox state for it; null when it is not in the reader's inbox (a person, the author). */
  state: InboxState | null;
}

/** For a projection returned by `readProjection` (membership already checked). */
export async function messagePlace(
  ctx: HostContext,
  reader: Principal,
  projection: MessageProjection,
): Promise<MessagePlace> {
  const db = ctx.store.db;
  const channel = await findChannelById(db, projection.channel_id);
  const stored = await findMessageById(db, projection.message_id);
  const entry = stored ? await findInboxEntry(db, reader.id, stored.seq) : undefined;
  return { channelName: displayChannel(channel?.name ?? projection.channel_id), state: entry?.state ?? null };
}
