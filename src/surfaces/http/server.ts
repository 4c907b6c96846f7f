import { join } from 'node:path';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { isSluiceError } from '../../core/errors.js';
import type { HostContext, Principal, SessionSettings } from '../../host/identity/index.js';
import { pingStore } from '../../host/identity/index.js';
import { type LiveHub, startLiveHub } from '../../host/live/index.js';
import { sweepUploadTemp } from '../../host/media/index.js';
import { RpcConnection } from '../rpc/connection.js';
import { type DispatchObserver, handleRpcBytes } from '../rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS, type RpcLimits } from '../rpc/methods.js';
import { packageRoot } from '../sluice-package.js';
import { requireAuth, sessionCookieName } from './auth.js';
import { channelCreateRateGate } from './channel-create-rate.js';
import { createHostAllowList, registerRequestGuard } from './guard.js';
import {
  capBodiesPerPrincipal,
  DEFAULT_HTTP_LIMITS,
  type HttpLimits,
  installRequestLimits,
  nodeServerOptions,
} from './limits.js';
import { requestLogOptions } from './log-redaction.js';
import { registerLoginRoutes } from './login.js';
import { registerMcpRoute } from './mcp.js';
import { registerMediaRoutes } from './media.js';
import { PrincipalGate } from './principal-gate.js';
import { sendRateGate } from './send-rate.js';
import { installSocketDeadlines } from './socket-deadlines.js';
import { registerStaticPage } from './static.js';
import { UploadsInFlight } from './uploads-in-flight.js';

/**
 * Age past which a temp upload left in `<home>/tmp` is swept when a host starts: an hour, or twice
 * the request timeout when that is longer (no live upload's file can be that old).
 */
export function uploadTempMaxAgeMs(limits: Pick<HttpLimits, 'requestTimeoutMs'>): number {
  return Math.max(60 * 60 * 1000, 2 * limits.requestTimeoutMs);
}

import { httpError } from './status.js';

/** How often an idle WebSocket's credential is checked again (revocation, logout, expiry). */
const CREDENTIAL_RECHECK_MS = 15_000;

export interface HostServerOptions {
  ctx: HostContext;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  limits?: Partial<RpcLimits>;
  /** Timeouts, the connection cap and per-principal transfer caps (docs/security.md). */
  httpLimits?: Partial<HttpLimits>;
  /** Fastify's logger (pino): false in tests, options or true in `sluice serve`. */
  logger?: FastifyServerOptions['logger'];
  /** Folder of the built web page; default web/dist in the package. */
  webRoot?: string;
  /** Mount MCP over Streamable HTTP at /mcp (default true). */
  mcp?: boolean;
  /** Host names accepted besides the loopback names and the bound address (`--allowed-host`). */
  allowedHosts?: readonly string[];
  /** Serve HTTPS with this PEM certificate and key (`--tls-cert`, `--tls-key`). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Login-link and session lifetimes. */
  sessions?: Partial<SessionSettings>;
  /** Request-log lines dropped so far because writing them failed (a full disk): `/healthz` shows it. */
  logLinesDropped?: () => number;
}

/** A running host: the Fastify app, its live hub and open WebSocket connections. */
export interface HostServer {
  app: FastifyInstance;
  hub: LiveHub;
  connections: ReadonlySet<RpcConnection>;
  /** Uploads being handled now (and how many have settled), for shutdown and status. */
  uploads: Pick<UploadsInFlight, 'count' | 'settled' | 'idle'>;
  limits: RpcLimits;
  /** `http://host:port` as bound. */
  url: string;
  /** Stops accepting, closes every socket and the live hub (the caller closes the store). */
  close(): Promise<void>;
}

/**
 * One Fastify process for people and devices: JSON-RPC 2.0 at `/rpc` (WebSocket and POST), media,
 * MCP over HTTP, the web page, `/login` and `/healthz`. Live updates follow the event log.
 */
export async function startHostServer(options: HostServerOptions): Promise<HostServer> {
  const { ctx } = options;
  const limits: RpcLimits = { ...DEFAULT_RPC_LIMITS, ...options.limits };
  const httpLimits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...options.httpLimits };
  const app = Fastify({
    logger: requestLogOptions(options.logger ?? false),
    ...(options.tls
      ? { https: { cert: options.tls.cert, key: options.tls.key, ...nodeServerOptions(httpLimits) } }
      : {}),
    http: nodeServerOptions(httpLimits),
    requestTimeout: nodeServerOptions(httpLimits).requestTimeout,
    keepAliveTimeout: httpLimits.keepAliveTimeoutMs,
    connectionTimeout: httpLimits.socketIdleTimeoutMs,
    bodyLimit: limits.maxFrameBytes,
    forceCloseConnections: true,
  });
  installRequestLimits(app, httpLimits);
  installSocketDeadlines(app.server, httpLimits, options.tls ? 'secureConnection' : 'connection');
  const admitSend = sendRateGate(httpLimits);
  const admitChannelCreate = channelCreateRateGate(httpLimits);
  const webSockets = new PrincipalGate(httpLimits.maxWebSocketsPerPrincipal);
  // A host error thrown outside a handler (authentication reading the store while PostgreSQL
  // restarts) answers with its own code and status, as a handler's would, not a bare 500;
  // Fastify's own errors (a body too large, bad JSON) keep their handling.
  app.setErrorHandler((err, _req, reply) => {
    if (!isSluiceError(err)) return reply.send(err);
    const { status, body } = httpError(err);
    return reply.code(status).send(body);
  });
  app.decorateRequest('principal', null);
  const bindHost = options.host ?? '127.0.0.1';
  const boundPort = () => {
    const address = app.server.address();
    return typeof address === 'object' && address ? address.port : (options.port ?? 7777);
  };
  app.decorate('sessionCookieName', { getter: () => sessionCookieName(boundPort()) });
  const observer: DispatchObserver = {
    onError: (method, err) => {
      if ((err as { name?: string }).name !== 'SluiceError' && !(err as { rpc?: unknown }).rpc) {
        app.log.error({ err, method }, 'rpc handler failed');
      }
    },
  };
  const hub = await startLiveHub(ctx, { onError: (err) => app.log.error({ err }, 'live feed failed') });
  const connections = new Set<RpcConnection>();

  await app.register(websocket, {
    options: { maxPayload: limits.maxFrameBytes },
    // On shutdown, tell each client why (1001 "going away") so it can reconnect to the next host.
    preClose(done) {
      for (const client of this.websocketServer.clients) client.close(1001, 'server shutting down');
      this.websocketServer.close(() => done());
    },
  });
  // After the WebSocket plugin's own onRequest hook, so an upgrade refused here still has its
  // socket closed by that plugin.
  registerRequestGuard(
    app,
    createHostAllowList({ bindHost, port: boundPort, allowedHosts: options.allowedHosts ?? [] }),
  );

  app.get('/healthz', async (_req, reply) => {
    await pingStore(ctx);
    return reply.send({ status: 'ok', logLinesDropped: options.logLinesDropped?.() ?? 0 });
  });

  const webRoot = options.webRoot ?? join(packageRoot(), 'web', 'dist');
  await registerLoginRoutes(app, ctx, {
    webRoot,
    secureCookie: options.tls !== undefined,
    ...(options.sessions ? { settings: options.sessions } : {}),
  });

  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    // The dispatcher parses the JSON itself, so malformed JSON is a JSON-RPC -32700, not an HTTP 400.
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: limits.maxFrameBytes },
      (_req, body, done) => done(null, body),
    );
    // onRequest: nobody unauthenticated gets a body read (or buffered) on their behalf.
    scope.addHook('onRequest', requireAuth(ctx));
    scope.addHook('onRequest', capBodiesPerPrincipal(httpLimits.maxRequestBodiesPerPrincipal));
    scope.route({
      method: 'GET',
      url: '/rpc',
      handler: (_req, reply) =>
        reply.code(426).send({
          error: { code: 'invalid_params', message: 'GET /rpc is a WebSocket: upgrade, or POST a request' },
        }),
      wsHandler: (socket, req) => {
        const principal = req.principal as Principal;
        // A fair share: one principal's sockets never take the whole connection cap.
        const releaseSlot = webSockets.tryEnter(principal.id);
        if (!releaseSlot) {
          socket.close(4429, `at most ${webSockets.max} WebSockets per principal are open; close one first`);
          return;
        }
        const connection = new RpcConnection({
          session: { ctx, principal, limits, admitSend, admitChannelCreate },
          socket,
          hub,
          observer,
        });
        connections.add(connection);
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
        const idleMs = httpLimits.idleWebSocketMs;
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
          connections.delete(connection);
        });
        socket.on('error', (err) => req.log.warn({ err }, 'websocket error'));
      },
    });
    scope.post('/rpc', async (req, reply) => {
      const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const reply_ = await handleRpcBytes(
        { ctx, principal: req.principal as Principal, limits, admitSend, admitChannelCreate },
        bytes,
        observer,
      );
      if (reply_ === null) return reply.code(204).send();
      return reply.type('application/json; charset=utf-8').send(reply_);
    });
  });

  // Temp files of uploads a killed process left behind (a live upload's file is written at least
  // once per idle timeout and lives no longer than the request timeout).
  await sweepUploadTemp(ctx, uploadTempMaxAgeMs(httpLimits));
  const uploads = new UploadsInFlight();
  await registerMediaRoutes(app, ctx, httpLimits, uploads);
  if (options.mcp !== false) {
    await registerMcpRoute(app, ctx, {
      maxBodyBytes: limits.maxFrameBytes,
      maxBodiesPerPrincipal: httpLimits.maxRequestBodiesPerPrincipal,
      admitSend,
      onInternalError: (err) => app.log.error({ err }, 'mcp tool failed'),
    });
  }
  registerStaticPage(app, webRoot);

  const address = await app.listen({ host: bindHost, port: options.port ?? 7777 });
  let closing: Promise<void> | undefined;
  return {
    app,
    hub,
    connections,
    uploads,
    limits,
    url: address,
    close() {
      closing ??= (async () => {
        hub.close();
        for (const c of connections) c.close();
        await app.close();
      })();
      return closing;
    },
  };
}
