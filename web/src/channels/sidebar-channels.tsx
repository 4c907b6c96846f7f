// The sidebar's "Channels" list (issue 28): the first page at once, "Show more" (or scrolling to
// its end) for the next, and the sidebar's filter box, which asks the host (`channel.list
// {filter}`), so a person with 10,000 channels finds one without the page ever holding them all.
// The box itself (SidebarFilter) sits above both lists: it filters the agents too (app.tsx).

import { useEffect, useRef, useState } from 'preact/hooks';
import './sidebar.css';
import { type Route, routeHref } from '../hooks.js';
import { describeError, type RpcClient } from '../rpc.js';
import type { ChannelListPage, ChannelSummary } from '../wire.js';
import { mergeChannels, SIDEBAR_PAGE } from './sidebar-list.js';
import type { SidebarChannels as ListState } from './use-sidebar-channels.js';

export type ChannelFilter = ReturnType<typeof useChannelFilter>;

export interface SidebarChannelsProps {
  list: ListState;
  /** The sidebar filter box's text, and the host's answer for it (useChannelFilter). */
  text: string;
  filter: ChannelFilter;
  route: Route;
  label: (channel: ChannelSummary) => string;
  unreadLabel: (unread: number) => string;
}

/** Typing settles this long before the host is asked. */
const FILTER_DELAY_MS = 200;

interface FilterResult {
  text: string;
  channels: ChannelSummary[];
  nextCursor: string | null;
  error: string | null;
}

/** Filter pages for `text`: a page that met the host's scan bound with few hits asks for the next. */
export function useChannelFilter(client: RpcClient, text: string) {
  const [result, setResult] = useState<FilterResult | null>(null);
  const asked = useRef(0);
  const ask = (query: string, cursor: string | null, shown: ChannelSummary[]) => {
    const mine = ++asked.current;
    const params = { order: 'activity', filter: query, limit: SIDEBAR_PAGE, ...(cursor ? { cursor } : {}) };
    client
      .call<ChannelListPage>('channel.list', params)
      .then((page) => {
        if (mine !== asked.current) return;
        const channels = mergeChannels(shown, page.channels);
        setResult({ text: query, channels, nextCursor: page.nextCursor, error: null });
        if (page.nextCursor !== null && channels.length < SIDEBAR_PAGE) ask(query, page.nextCursor, channels);
      })
      .catch((err) => {
        if (mine === asked.current)
          setResult({ text: query, channels: shown, nextCursor: null, error: describeError(err) });
      });
  };
  useEffect(() => {
    const query = text.trim();
    asked.current += 1;
    if (query === '') {
      setResult(null);
      return;
    }
    const timer = setTimeout(() => ask(query, null, []), FILTER_DELAY_MS);
    return () => clearTimeout(timer);
  }, [text, client]);
  const more = () => result?.nextCursor && ask(result.text, result.nextCursor, result.channels);
  return { result, more };
}

/** The sidebar's one filter box: channels (asked of the host) and agents (app.tsx) by name. */
export function SidebarFilter({ text, onText }: { text: string; onText: (text: string) => void }) {
  return (
    <input
      type="search"
      class="channel-filter"
      placeholder="Filter channels and agents"
      aria-label="Filter channels and agents"
      value={text}
      onInput={(e) => onText((e.currentTarget as HTMLInputElement).value)}
    />
  );
}

export function SidebarChannels({ list, text, filter, route, label, unreadLabel }: SidebarChannelsProps) {
  const filtering = text.trim() !== '';
  const shown = filtering ? (filter.result?.channels ?? null) : list.channels;
  const hasMore = filtering ? Boolean(filter.result?.nextCursor) : list.hasMore;
  const more = () => (filtering ? filter.more() : void list.more());
  // Scrolling the list to its end reads the next page (only once the person scrolls: a short first
  // page on a tall screen asks for nothing more by itself).
  const onScroll = (event: Event) => {
    const box = event.currentTarget as HTMLElement;
    if (hasMore && box.scrollTop + box.clientHeight >= box.scrollHeight - 48) more();
  };
  return (
    <div class="sidebar-channels">
      {filtering && filter.result?.error && (
        <p class="error" role="alert">
          could not filter channels: {filter.result.error}
        </p>
      )}
      {shown === null ? (
        !list.error && <p class="muted">{filtering ? 'Filtering…' : 'Loading channels…'}</p>
      ) : shown.length === 0 ? (
        <p class="muted">
          {filtering
            ? hasMore
              ? 'Still looking…'
              : `No channel of yours matches "${text.trim()}".`
            : 'No channels yet. Press New channel to make one, or New message to write to an agent.'}
        </p>
      ) : (
        <ul class="nav-list" aria-labelledby="channels-heading" onScroll={onScroll}>
          {shown.map((channel) => {
            const unread = channel.unread ?? 0;
            return (
              <li key={channel.id}>
                <a
                  class={`nav-item${unread > 0 ? ' has-unread' : ''}`}
                  href={routeHref({ kind: 'channel', channelId: channel.id })}
                  aria-current={
                    route.kind === 'channel' && route.channelId === channel.id ? 'page' : undefined
                  }
                  data-channel-id={channel.id}
                  // The count is the link's description, not its name: the name stays the channel's.
                  aria-describedby={unread > 0 ? `unread-${channel.id}` : undefined}
                >
                  <span class="nav-label">{label(channel)}</span>
                  {unread > 0 && (
                    <span class="unread-badge" aria-hidden="true">
                      {unreadLabel(unread)}
                    </span>
                  )}
                </a>
                {unread > 0 && (
                  <span id={`unread-${channel.id}`} hidden>
                    {unreadLabel(unread)} unread
                  </span>
                )}
              </li>
            );
          })}
        </ul>
      )}
      {hasMore && (
        <button
          type="button"
          class="button ghost show-more"
          disabled={!filtering && list.loadingMore}
          onClick={more}
        >
          Show more
        </button>
      )}
    </div>
  );
}
