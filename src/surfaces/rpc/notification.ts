import type { LiveMethod, LiveNotifications } from '../../core/wire/index.js';

/**
 * A live notification's JSON-RPC frame (no id). Its params are checked against the method's entry
 * in {@link LiveNotifications}, the map the web page's handlers are typed by, so the host cannot
 * send a method or a shape the page does not expect without failing the type check.
 */
export function notification<M extends LiveMethod>(method: M, params: LiveNotifications[M]): string {
  return JSON.stringify({ jsonrpc: '2.0', method, params });
}
