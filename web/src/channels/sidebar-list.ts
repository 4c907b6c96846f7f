// The sidebar's channel list (issue 28): most recent activity first, one bounded `channel.list`
// page at a time. Pages and live rows are merged by channel id and sorted on the host's activity
// key, so a page that arrives after a live change never undoes it and nothing shows twice.

import type { ChannelSummary } from '../wire.js';

/** Rows the first sidebar page asks for (bench/channels.ts measures this page). */
export const SIDEBAR_PAGE = 30;

/** The host's order: activity descending, then channel id descending. */
export function byActivity(a: ChannelSummary, b: ChannelSummary): number {
  const d = (b.activity ?? 0) - (a.activity ?? 0);
  if (d !== 0) return d;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * `rows` put into `list` by id, in activity order. A row older than the one already there (a page
 * read before a live change reached the page) keeps the newer one.
 */
export function mergeChannels(
  list: readonly ChannelSummary[],
  rows: readonly ChannelSummary[],
): ChannelSummary[] {
  const byId = new Map(list.map((c) => [c.id, c] as const));
  for (const row of rows) {
    const had = byId.get(row.id);
    if (!had || (row.activity ?? 0) >= (had.activity ?? 0)) byId.set(row.id, row);
  }
  return [...byId.values()].sort(byActivity);
}

/** A `channel.unread` push: the count, and the channel moved to where its activity puts it. */
export function withUnread(
  list: readonly ChannelSummary[],
  event: { channelId: string; unread: number; activity?: number },
): ChannelSummary[] {
  return list
    .map((c) =>
      c.id === event.channelId
        ? { ...c, unread: event.unread, activity: Math.max(c.activity ?? 0, event.activity ?? 0) }
        : c,
    )
    .sort(byActivity);
}
