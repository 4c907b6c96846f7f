// The sidebar's channels as state: the first `channel.list` page at load (one request, whatever
// the number of channels), more pages as the person asks, and the live channel-list pushes merged
// in (issue 28). Subscribed before the first page is sent (effects run in order; the host answers
// a socket's requests in order), so every change after a page was read is announced.

import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useOnReconnect } from '../hooks.js';
import { describeError, type RpcClient } from '../rpc.js';
import type { ChannelListPage, ChannelSummary } from '../wire.js';
import { ChannelListLoads, type ListChange } from './list-loads.js';
import { mergeChannels, SIDEBAR_PAGE, withUnread } from './sidebar-list.js';

export interface SidebarChannels {
  /** Null until the first page is in. */
  channels: ChannelSummary[] | null;
  error: string | null;
  /** Another page follows the ones shown. */
  hasMore: boolean;
  loadingMore: boolean;
  /** Reads the first page again (after a reconnect, a resync, or a change made here). */
  reload(): Promise<void>;
  /** Reads the next page. */
  more(): Promise<void>;
  /** Puts one channel of the person's in the list (a link to a channel no page reached yet). */
  find(channelId: string): Promise<void>;
}

export function useSidebarChannels(client: RpcClient): SidebarChannels {
  const [channels, setChannels] = useState<ChannelSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const cursorRef = useRef<string | null>(null);
  const loads = useMemo(() => new ChannelListLoads(), []);

  const page = useCallback(
    (params: Record<string, unknown>) =>
      client.call<ChannelListPage>('channel.list', { order: 'activity', limit: SIDEBAR_PAGE, ...params }),
    [client],
  );
  const keepCursor = (next: string | null) => {
    cursorRef.current = next;
    setCursor(next);
  };

  const reload = useCallback(() => {
    const load = loads.begin();
    return page({})
      .then((first) => {
        const list = loads.finish(load, mergeChannels([], first.channels));
        if (list === null) return;
        keepCursor(first.nextCursor);
        setChannels(list);
        setError(null);
      })
      .catch((err) => {
        if (loads.fail(load)) setError(`could not list channels: ${describeError(err)}`);
      });
  }, [loads, page]);

  /** A page after the first: merged into what is shown, with the changes since it was asked applied again. */
  const mergePage = useCallback(
    (params: Record<string, unknown>) => {
      const changes = loads.watch();
      return page(params).then(
        (next) => {
          // A channel left while the page was on its way must not come back with it.
          const since = changes();
          setChannels((list) =>
            since.reduce((merged, apply) => apply(merged), mergeChannels(list ?? [], next.channels)),
          );
          return next;
        },
        (err: unknown) => {
          changes();
          throw err;
        },
      );
    },
    [loads, page],
  );

  const more = useCallback(async () => {
    const after = cursorRef.current;
    if (after === null || loadingMore) return;
    setLoadingMore(true);
    try {
      const next = await mergePage({ cursor: after });
      if (cursorRef.current === after) keepCursor(next.nextCursor);
    } catch (err) {
      setError(`could not list more channels: ${describeError(err)}`);
    } finally {
      setLoadingMore(false);
    }
  }, [mergePage, loadingMore]);

  const find = useCallback(
    (channelId: string) =>
      mergePage({ channelId, limit: 1 })
        .then(() => undefined)
        .catch(() => undefined),
    [mergePage],
  );

  /** A live change: shown now if the list is there, and kept for any page under way. */
  const change = useCallback(
    (apply: ListChange) => {
      loads.record(apply);
      setChannels((list) => (list === null ? list : apply(list)));
    },
    [loads],
  );
  useOnReconnect(client, reload);
  useEffect(() => {
    const dispose = client.subscribe({ channelList: true });
    const offs = [
      ...(['channel.joined', 'channel.updated'] as const).map((event) =>
        client.on(event, ({ channel }) => change((list) => mergeChannels(list, [channel]))),
      ),
      client.on('channel.left', ({ channelId }) => change((list) => list.filter((c) => c.id !== channelId))),
      client.on('channel.unread', (event) => change((list) => withUnread(list, event))),
      // Too many changes while this socket was backed up: the host says to read the list again.
      client.on('channel.list.resync', () => void reload()),
    ];
    return () => {
      for (const off of offs) off();
      dispose();
    };
  }, [client, reload, change]);
  useEffect(() => {
    void reload();
  }, [reload]);

  return { channels, error, hasMore: cursor !== null, loadingMore, reload, more, find };
}
