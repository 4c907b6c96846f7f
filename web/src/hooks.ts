import { useEffect, useRef, useState } from 'preact/hooks';
import type { ConnectionStatus, RpcClient } from './rpc.js';

export type Route =
  | { kind: 'home' }
  | { kind: 'channel'; channelId: string }
  | { kind: 'queue'; agent: string };

export function parseRoute(hash: string): Route {
  const [, kind, rawId] = /^#\/(channel|queue)\/(.+)$/.exec(hash) ?? [];
  if (!rawId) return { kind: 'home' };
  let id: string;
  try {
    id = decodeURIComponent(rawId);
  } catch {
    return { kind: 'home' };
  }
  return kind === 'channel' ? { kind: 'channel', channelId: id } : { kind: 'queue', agent: id };
}

export function routeHref(route: Route): string {
  if (route.kind === 'channel') return `#/channel/${encodeURIComponent(route.channelId)}`;
  if (route.kind === 'queue') return `#/queue/${encodeURIComponent(route.agent)}`;
  return '#/';
}

/** The route in `location.hash`, kept current (back/forward work, links are shareable). */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', update);
    // Effects run after paint: a hash that changed between the first render and now (a link opened
    // as the page loads; seen on a loaded machine) fired its event before anyone listened.
    update();
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}

export function useConnectionStatus(client: RpcClient): ConnectionStatus {
  const [status, setStatus] = useState(client.status);
  useEffect(() => {
    setStatus(client.status);
    return client.onStatus(setStatus);
  }, [client]);
  return status;
}

/** Runs the latest `effect` after each reconnect (not the first open: requests made before it just wait). */
export function useOnReconnect(client: RpcClient, effect: () => void): void {
  const latest = useRef(effect);
  latest.current = effect;
  useEffect(
    () =>
      client.onOpen((reconnected) => {
        if (reconnected) latest.current();
      }),
    [client],
  );
}
