// The timeline shows a channel oldest-first; `channel.history` pages run newest-first with a cursor
// towards older messages. These helpers merge pages and live events without duplicates. Pure.

import type { TimelineMessage } from '../wire.js';

/** Messages sorted oldest-first by `seq`, one per id; a newer copy (an edit) replaces an older one. */
export function mergeMessages(
  current: readonly TimelineMessage[],
  incoming: readonly TimelineMessage[],
): TimelineMessage[] {
  const byId = new Map<string, TimelineMessage>();
  for (const message of current) byId.set(message.messageId, message);
  for (const message of incoming) {
    const held = byId.get(message.messageId);
    if (held && held.revision > message.revision) continue;
    byId.set(message.messageId, message);
  }
  return [...byId.values()].sort((a, b) => a.seq - b.seq);
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
