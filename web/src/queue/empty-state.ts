// What an agent's queue says when it shows no card. Each sentence must be true of the summary it
// is read from: "helper has no messages yet" only when none was ever queued, "nothing waiting" only
// when nothing is pending, and pending messages the reader may not see (their channels are not the
// reader's: an owner or manager who shares none with the agent) are said to be there, by count.

import type { MessageSource, QueueSummary } from '../wire.js';

const FROM: Record<MessageSource, string> = {
  person: 'from people',
  agent: 'from agents',
  unknown: 'from unknown senders',
};

/** The empty card list's one line, for the summary and source filter the list was read with. */
export function queueEmptyText(
  agent: string,
  summary: Pick<QueueSummary, 'total' | 'counts' | 'totalQueued'>,
  source: MessageSource | undefined,
): string {
  const pending = source === undefined ? summary.total : summary.counts[source];
  if (pending > 0) {
    const from = source === undefined ? '' : ` ${FROM[source]}`;
    return `${pending} waiting${from} in conversations you are not in: you see how many, not what they say.`;
  }
  if (source !== undefined) return `Nothing waiting ${FROM[source]}.`;
  // An older host sends no totalQueued: say only what the counts show.
  if (summary.totalQueued === 0) return `${agent} has no messages yet.`;
  if (summary.totalQueued === undefined) return `Nothing is waiting for ${agent}.`;
  return `Nothing waiting: every message sent to ${agent} has been taken.`;
}
