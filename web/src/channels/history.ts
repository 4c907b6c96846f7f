// The timeline shows a channel oldest-first; `channel.history` pages run newest-first with a cursor
// towards older messages. These helpers merge pages and live events without duplicates. Pure.

import type { LiveMessageStub, TimelineEntry } from '../wire.js';

/** A live stub (no author, no body: its record was over the reply budget) rather than a record. */
export function isMessageStub(entry: TimelineEntry): entry is LiveMessageStub {
  return !('author' in entry);
}

/** Whether the held copy of a message stays when another arrives: the newer revision wins; a stub tells less than any record. */
function keepsHeld(held: TimelineEntry, incoming: TimelineEntry): boolean {
  if (isMessageStub(incoming)) return !isMessageStub(held);
  return !isMessageStub(held) && held.revision > incoming.revision;
}

/**
 * Entries sorted oldest-first by `seq`, one per id; a newer copy (an edit) replaces an older one,
 * and a record replaces a stub of the same message (a stub never replaces a record: see {@link mergeStub}).
 */
export function mergeMessages<T extends TimelineEntry>(current: readonly T[], incoming: readonly T[]): T[] {
  const byId = new Map<string, T>();
  for (const message of current) byId.set(message.messageId, message);
  for (const message of incoming) {
    const held = byId.get(message.messageId);
    if (held && keepsHeld(held, message)) continue;
    byId.set(message.messageId, message);
  }
  return [...byId.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * A live stub merged in: shown where the timeline holds nothing of the message, and in place of a
 * record an edit made stale (`edited`); a record already held of a new message stays (it is the
 * same message, and tells more).
 */
export function mergeStub(
  current: readonly TimelineEntry[],
  stub: LiveMessageStub,
  edited: boolean,
): TimelineEntry[] {
  const others = edited ? current.filter((m) => m.messageId !== stub.messageId) : current;
  return mergeMessages<TimelineEntry>(others, [stub]);
}

/**
 * A reply excerpt as plain text: the host sends the parent's first line as written, so Markdown
 * marks (`**`, `_`, backticks, a heading's `#`, a quote's `>`, `[text](url)`) are dropped here.
 */
export function plainExcerpt(line: string): string {
  return line
    .replace(/^\s*(#{1,6}\s+|>\s*|[-*+]\s+)/, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/(\*\*|__|~~|`)/g, '');
}
