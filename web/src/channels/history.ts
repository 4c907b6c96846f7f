// The timeline shows a channel oldest-first; `channel.history` pages run newest-first with a cursor
// towards older messages. These helpers merge pages and live events without duplicates. Pure.

import type { TimelineMessage } from '../wire.js';

/** Messages sorted oldest-first by (created_at, id), one per id; a later copy (an edit) replaces an earlier one. */
export function mergeMessages(
  current: readonly TimelineMessage[],
  incoming: readonly TimelineMessage[],
): TimelineMessage[] {
  const byId = new Map<string, TimelineMessage>();
  for (const message of current) byId.set(message.id, message);
  for (const message of incoming) byId.set(message.id, message);
  return [...byId.values()].sort((a, b) =>
    a.created_at === b.created_at
      ? a.id < b.id
        ? -1
        : a.id > b.id
          ? 1
          : 0
      : a.created_at < b.created_at
        ? -1
        : 1,
  );
}
