// The page's session is the http-only cookie set when the button on `/login?code=…` is pressed (a
// server-side session, not a token). Before opening the socket the page asks `host.hello` over HTTP
// POST: a 401 means "open a login link", which a failed WebSocket upgrade could not tell apart from
// a network error.

import { pageDrafts } from './channels/drafts.js';
import type { Hello } from './wire.js';

export type SessionCheck =
  | { kind: 'ok'; hello: Hello }
  | { kind: 'login' }
  | { kind: 'error'; message: string };

export async function checkSession(): Promise<SessionCheck> {
  let response: Response;
  try {
    response = await fetch('/rpc', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'host.hello', params: {} }),
    });
  } catch (err) {
    return {
      kind: 'error',
      message: `cannot reach the host: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (response.status === 401 || response.status === 403) return { kind: 'login' };
  if (!response.ok) return { kind: 'error', message: `the host answered ${response.status}` };
  const body = (await response.json()) as { result?: Hello; error?: { code: number; message: string } };
  if (body.error) {
    return body.error.code === -32001 || /auth|token|login/i.test(body.error.message)
      ? { kind: 'login' }
      : { kind: 'error', message: body.error.message };
  }
  if (!body.result) return { kind: 'error', message: 'the host sent no hello' };
  return { kind: 'ok', hello: body.result };
}

/** The same-origin WebSocket address of `/rpc`. */
export function rpcSocketUrl(location: Location): string {
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/rpc`;
}

/**
 * Ends the session on the host (the cookie stops working everywhere, at once) and reloads, which
 * shows the signed-out notice. The cookie is http-only, so only the host can clear it. The tab's
 * drafts are dropped first.
 */
export async function logOut(): Promise<void> {
  // Unsent drafts stay in the tab's sessionStorage otherwise: the next person there must not see them.
  pageDrafts.clear();
  try {
    await fetch('/logout', { method: 'POST', credentials: 'same-origin' });
  } finally {
    window.location.assign('/');
  }
}
