import type { WebSocket } from '@fastify/websocket';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../../host/identity/index.js';
import type { LiveHub } from '../../host/live/index.js';
import { RpcConnection } from '../rpc/connection.js';
import type { DispatchObserver } from '../rpc/dispatch.js';
import type { RpcSession } from '../rpc/methods.js';
import { authenticatedPrincipal } from './auth.js';
import type { PrincipalGate } from './principal-gate.js';

/** How often an idle WebSocket's credential is checked again (revocation, logout, expiry). */
const CREDENTIAL_RECHECK_MS = 15_000;

/** What every `/rpc` WebSocket of one app shares. */
export interface RpcSocketDeps {
  session: Omit<RpcSession, 'principal' | 'subscriptions'>;
  hub: LiveHub;
  observer: DispatchObserver;
  /** Each principal's fair share of the open WebSockets. */
  webSockets: PrincipalGate;
  /** An open socket with no subscription that sends nothing for this long is closed, ms. */
  idleWebSocketMs: number;
  /** The open connections (shutdown closes them). */
  connections: Set<RpcConnection>;
}

/** Serves JSON-RPC on one authenticated `GET /rpc` WebSocket until it closes. */
export function serveRpcSocket(socket: WebSocket, req: FastifyRequest, deps: RpcSocketDeps): void {
  const principal: Principal = authenticatedPrincipal(req);
  // A fair share: one principal's sockets never take the whole connection cap.
  const releaseSlot = deps.webSockets.tryEnter(principal.id);
  if (!releaseSlot) {
    socket.close(4429, `at most ${deps.webSockets.max} WebSockets per principal are open; close one first`);
    return;
  }
  const connection = new RpcConnection({
    session: { ...deps.session, principal },
    socket,
    hub: deps.hub,
    observer: deps.observer,
  });
  deps.connections.add(connection);
  // Authorization before anything runs: a frame is handled only after a credential check that
  // started after it arrived (revoked, expired or logged out → refused and the socket closed,
  // so nothing runs after "Log out" and an open page does not outlive its session). Frames
  // that arrive during a check wait for the next one, so a burst costs one check, not one
  // each, and frames keep their arrival order.
  let waiting: string[] = [];
  let admitting = false;
  let ended = false;
  const admitWaiting = async () => {
    admitting = true;
    while (waiting.length > 0 && !ended) {
      const batch = waiting;
      waiting = [];
      const current = await credentialCurrent();
      if (ended) break;
      if (!current) {
        closeAsEnded();
        break;
      }
      for (const text of batch) connection.receive(text);
    }
    waiting = [];
    admitting = false;
  };
  // An open socket with no subscription that sends nothing only holds a connection: closed
  // within a quarter of the idle time after it passes.
  const idleMs = deps.idleWebSocketMs;
  let lastFrameAt = Date.now();
  const idle = setInterval(
    () => {
      if (!connection.subscribed && Date.now() - lastFrameAt >= idleMs)
        socket.close(4408, `idle: no subscription and no request for ${idleMs / 1000} s`);
    },
    Math.max(50, Math.floor(idleMs / 4)),
  );
  idle.unref();
  socket.on('message', (data, isBinary) => {
    lastFrameAt = Date.now();
    if (isBinary) {
      socket.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: -32600,
            message: 'send JSON-RPC as text frames',
            data: { code: 'invalid_request' },
          },
        }),
      );
      return;
    }
    waiting.push(data.toString());
    if (!admitting) void admitWaiting();
  });
  // A store error is not a revocation: the socket goes on, and the timer asks again.
  const credentialCurrent = (): Promise<boolean> =>
    req.credentialIsCurrent ? req.credentialIsCurrent().catch(() => true) : Promise.resolve(true);
  const closeAsEnded = () => {
    ended = true;
    socket.close(4401, 'the session or token has ended; sign in again');
  };
  // Pushes need no request: an idle socket is checked on a timer too.
  const recheck = setInterval(() => {
    void credentialCurrent().then((current) => {
      if (!current) closeAsEnded();
    });
  }, CREDENTIAL_RECHECK_MS);
  recheck.unref();
  socket.on('close', () => {
    releaseSlot();
    clearInterval(idle);
    clearInterval(recheck);
    connection.close();
    deps.connections.delete(connection);
  });
  socket.on('error', (err) => req.log.warn({ err }, 'websocket error'));
}
