import { join } from 'node:path';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { isSluiceError } from '../../core/errors.js';
import type { HostContext, SessionSettings } from '../../host/identity/index.js';
import { lastUseNotRecorded, pingStore } from '../../host/identity/index.js';
import { type LiveHub, startLiveHub } from '../../host/live/index.js';
import { sweepUploadTemp } from '../../host/media/index.js';
import type { RpcConnection } from '../rpc/connection.js';
import { type DispatchObserver, handleRpcBytes } from '../rpc/dispatch.js';
import { isExpectedFailure } from '../rpc/errors.js';
import { DEFAULT_RPC_LIMITS, type RpcLimits } from '../rpc/methods.js';
import { packageRoot } from '../sluice-package.js';
import { authenticatedPrincipal, requireAuth, sessionCookieName } from './auth.js';
import { channelCreateRateGate } from './channel-create-rate.js';
import { answerClientError, answerRouterRefusal, codedFastifyRefusal } from './framework-errors.js';
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
import { serveRpcSocket } from './rpc-socket.js';
import { sendRateGate } from './send-rate.js';
import { installSocketDeadlines } from './socket-deadlines.js';
import { registerStaticPage } from './static.js';
import { httpError } from './status.js';
import { storeProbe } from './store-probe.js';
import { UploadsInFlight } from './uploads-in-flight.js';

/**
 * Age past which a temp upload left in `<home>/tmp` is swept when a host starts: an hour, or twice
 * the request timeout when that is longer (no live upload's file can be that old).
 */
export function uploadTempMaxAgeMs(limits: Pick<HttpLimits, 'requestTimeoutMs'>): number {
  return Math.max(60 * 60 * 1000, 2 * limits.requestTimeoutMs);
}

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

/**
 * A built host, not yet listening: the Fastify app (`app.inject` serves requests without a port),
 * its live hub and open WebSocket connections.
 */
export interface HostApp {
  app: FastifyInstance;
  hub: LiveHub;
  connections: ReadonlySet<RpcConnection>;
  /** Uploads being handled now (and how many have settled), for shutdown and status. */
  uploads: Pick<UploadsInFlight, 'count' | 'settled' | 'idle'>;
  limits: RpcLimits;
  /** Where {@link listenHostApp} binds: the address and port it was built for (0: a free port). */
  bind: { host: string; port: number };
  /** Stops accepting, closes every socket and the live hub (the caller closes the store). */
  close(): Promise<void>;
}

/** A listening host. */
export interface HostServer extends HostApp {
  /** `http://host:port` as bound. */
  url: string;
}

/** Builds the host ({@link buildHostApp}) and listens ({@link listenHostApp}). */
export async function startHostServer(options: HostServerOptions): Promise<HostServer> {
  const built = await buildHostApp(options);
  try {
    return await listenHostApp(built);
  } catch (err) {
    await built.close();
    throw err;
  }
}

/** Starts accepting connections at the address the app was built for. */
export async function listenHostApp(built: HostApp): Promise<HostServer> {
  const url = await built.app.listen(built.bind);
  return { ...built, url };
}

/**
 * One Fastify process for people and devices: JSON-RPC 2.0 at `/rpc` (WebSocket and POST), media,
 * MCP over HTTP, the web page, `/login` and `/healthz`. Live updates follow the event log.
 */
export async function buildHostApp(options: HostServerOptions): Promise<HostApp> {
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
    // Refusals by the router and by Node carry Sluice's error shape too (framework-errors.ts).
    frameworkErrors: answerRouterRefusal,
    clientErrorHandler: answerClientError,
  });
  installRequestLimits(app, httpLimits);
  installSocketDeadlines(app.server, httpLimits, options.tls ? 'secureConnection' : 'connection');
  const admitSend = sendRateGate(httpLimits);
  const admitChannelCreate = channelCreateRateGate(httpLimits);
  const webSockets = new PrincipalGate(httpLimits.maxWebSocketsPerPrincipal);
  // A host error thrown outside a handler (authentication reading the store while PostgreSQL
  // restarts) answers with its own code and status, as a handler's would, not a bare 500;
  // Fastify's own refusals (a body too large, bad JSON) keep their status, in Sluice's shape.
  app.setErrorHandler((err, _req, reply) => {
    const fastifyStatus = (err as { statusCode?: unknown }).statusCode;
    if (
      !isSluiceError(err) &&
      typeof fastifyStatus === 'number' &&
      fastifyStatus >= 400 &&
      fastifyStatus < 500
    ) {
      return reply.code(fastifyStatus).send(codedFastifyRefusal(fastifyStatus, err as { code?: unknown }));
    }
    if (!isSluiceError(err)) return reply.send(err);
    const { status, body } = httpError(err);
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send(codedFastifyRefusal(404)));
  app.decorateRequest('principal', null);
  const bind = { host: options.host ?? '127.0.0.1', port: options.port ?? 7777 };
  const boundPort = () => {
    const address = app.server.address();
    return typeof address === 'object' && address ? address.port : bind.port;
  };
  app.decorate('sessionCookieName', { getter: () => sessionCookieName(boundPort()) });
  const observer: DispatchObserver = {
    onError: (method, err) => {
      if (!isExpectedFailure(err)) app.log.error({ err, method }, 'rpc handler failed');
    },
  };
  const hub = await startLiveHub(ctx, { onError: (err) => app.log.error({ err }, 'live feed failed') });
  const connections = new Set<RpcConnection>();
  const socketDeps = {
    session: { ctx, limits, admitSend, admitChannelCreate },
    hub,
    observer,
    webSockets,
    idleWebSocketMs: httpLimits.idleWebSocketMs,
    connections,
  };

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
    createHostAllowList({ bindHost: bind.host, port: boundPort, allowedHosts: options.allowedHosts ?? [] }),
  );

  const probeStore = storeProbe(() => pingStore(ctx));
  app.get('/healthz', async (_req, reply) => {
    await probeStore();
    return reply.send({
      status: 'ok',
      logLinesDropped: options.logLinesDropped?.() ?? 0,
      lastUseNotRecorded: lastUseNotRecorded(ctx),
    });
  });

  const webRoot = options.webRoot ?? join(packageRoot(), 'web', 'dist');
  await registerLoginRoutes(app, ctx, {
    webRoot,
    secureCookie: options.tls !== undefined,
    ...(options.sessions ? { settings: options.sessions } : {}),
  });

  // One count of bodies in flight per principal for /rpc and /mcp together.
  const capBodies = capBodiesPerPrincipal(httpLimits.maxRequestBodiesPerPrincipal);
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
    scope.addHook('onRequest', capBodies);
    scope.route({
      method: 'GET',
      url: '/rpc',
      handler: (_req, reply) =>
        reply.code(426).send({
          error: { code: 'invalid_params', message: 'GET /rpc is a WebSocket: upgrade, or POST a request' },
        }),
      wsHandler: (socket, req) => serveRpcSocket(socket, req, socketDeps),
    });
    scope.post('/rpc', async (req, reply) => {
      const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const reply_ = await handleRpcBytes(
        { ctx, principal: authenticatedPrincipal(req), limits, admitSend, admitChannelCreate },
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
      capBodies,
      admitSend,
      onInternalError: (err) => app.log.error({ err }, 'mcp tool failed'),
    });
  }
  registerStaticPage(app, webRoot);

  let closing: Promise<void> | undefined;
  return {
    app,
    hub,
    connections,
    uploads,
    limits,
    bind,
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
