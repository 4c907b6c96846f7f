import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import {
  type ChannelRow,
  findChannelById,
  findChannelByName,
  listChannelsPageOf,
} from '../../store/ops/channels.js';
import type { Db } from '../../store/store.js';
import { closestNames, type Principal } from '../identity/principals.js';

// Naming a channel the way every channel command takes it (`#name` or an id), with a did-you-mean
// that never reveals another channel's name (I6). Shared by channels.ts and invitations.ts.

/**
 * Resolves `#name` or a channel id to a channel row, without any access check (a miss suggests
 * only the actor's own channels).
 */
export async function findChannelRef(db: Db, actor: Principal, ref: string): Promise<ChannelRow> {
  const channel =
    typeof ref !== 'string'
      ? undefined
      : ref.startsWith('#')
        ? await findChannelByName(db, ref.slice(1))
        : await findChannelById(db, ref);
  if (!channel) throw await channelNotFound(db, actor, String(ref));
  return channel;
}

/** Channels scanned for a did-you-mean: enough for anyone's own list, bounded for the odd giant. */
const SUGGESTION_SCAN = 1000;

/**
 * `not_found` for a channel reference, suggesting the closest names among the group channels the
 * actor is a member of now: never another channel's name (docs/security.md, I6).
 */
export async function channelNotFound(db: Db, actor: Principal, ref: string): Promise<SluiceError> {
  const quoted = quoteInput(ref);
  const names = ref.startsWith('#')
    ? (await listChannelsPageOf(db, actor.id, { limit: SUGGESTION_SCAN }))
        .filter((c) => c.kind === 'group')
        .map((c) => c.name)
    : [];
  const suggestions = closestNames(ref.slice(1), names).map((name) => `#${name}`);
  const hint = suggestions.length > 0 ? ` (did you mean ${suggestions.join(' or ')}?)` : '';
  return new SluiceError('not_found', `no channel ${quoted}${hint}`, { name: ref.slice(0, 80), suggestions });
}

/** How a message names a channel: `#name`, or "that DM". */
export function describeChannel(channel: Pick<ChannelRow, 'kind' | 'name'>): string {
  return channel.kind === 'dm' ? 'that DM' : `#${channel.name}`;
}
