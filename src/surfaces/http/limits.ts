import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SluiceError } from '../../core/errors.js';
import { PrincipalGate } from './principal-gate.js';

/**
 * Limits the HTTP server enforces before doing work for a request; each is a named setting
 * (`startHostServer({ httpLimits })`, `SLUICE_HTTP_LIMITS` for `sluice serve`) with this default.
 */
export interface HttpLimits {
  /** Time a client has to send the complete request headers (slow loris), ms. */
  headersTimeoutMs: number;
  /** Time a client has to send the complete request, headers and body, ms. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open between requests, ms. */
  keepAliveTimeoutMs: number;
  /** A connection with no bytes moving either way for this long is closed (unread downloads), ms. */
  socketIdleTimeoutMs: number;
  /** Open connections at once (WebSockets included); further ones are closed on accept. */
  maxConnections: number;
  /**
   * POST requests with a body one principal may have in progress at once, `/rpc` and `/mcp`
   * together; more answer 429 unread. Bounds what half-sent bodies hold: this many times the
   * largest frame.
   */
  maxRequestBodiesPerPrincipal: number;
  /** Uploads one principal may have in progress at once; more answer 429. */
  maxUploadsPerPrincipal: number;
  /** Downloads one principal may have in progress at once; more answer 429. */
  maxDownloadsPerPrincipal: number;
  /** Open WebSockets per principal; one more is closed at once with 4429. */
  maxWebSocketsPerPrincipal: number;
  /** A WebSocket with no subscription that sends nothing for this long is closed with 4408, ms. */
  idleWebSocketMs: number;
  /** Connections from one address not (yet) carrying an authenticated request; more are closed on accept. */
  maxUnauthenticatedPerAddress: number;
  /** A request body must arrive at least this fast, judged over each `bodyRateWindowMs`. */
  minBodyBytesPerSecond: number;
  /** The window the body rate is judged over, ms. */
  bodyRateWindowMs: number;
  /** Sends (`message.send`, MCP `message_send`/`message_reply`) one principal may make at once. */
  sendBurst: number;
  /** Sends a minute one principal regains, up to `sendBurst`. */
  sendsPerMinute: number;
  /** 1: the owner's sends and channel creations are rate-limited too; 0 (default): the owner is exempt. */
  rateLimitOwner: number;
  /** Channels (`channel.create`) one principal may create at once. */
  channelCreateBurst: number;
  /** Channels a minute one principal regains, up to `channelCreateBurst`. */
  channelCreatesPerMinute: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 10_000,
  // A 64 MiB upload at 1 MB/s still fits.
  requestTimeoutMs: 120_000,
  keepAliveTimeoutMs: 5_000,
  socketIdleTimeoutMs: 60_000,
  maxConnections: 256,
  maxRequestBodiesPerPrincipal: 8,
  maxUploadsPerPrincipal: 4,
  // A browser opens up to 6 connections per origin; two tabs of images stay under this.
  maxDownloadsPerPrincipal: 16,
  // 32 × 8 principals still leave the owner room under maxConnections.
  maxWebSocketsPerPrincipal: 32,
  idleWebSocketMs: 300_000,
  // A quarter of maxConnections: one address's half-open connections cannot fill the host.
  maxUnauthenticatedPerAddress: 64,
  minBodyBytesPerSecond: 1_024,
  bodyRateWindowMs: 10_000,
  // Generous for a person or a working agent, a wall for a flood: 100 at once, then 10 a second.
  sendBurst: 100,
  sendsPerMinute: 600,
  rateLimitOwner: 0,
  // A new team's worth at once, then one a minute: 300 groups take hours, not seconds.
  channelCreateBurst: 20,
  channelCreatesPerMinute: 1,
};

/** Settings that are switches (0 or 1) rather than positive integers. */
const SWITCHES: readonly (keyof HttpLimits)[] = ['rateLimitOwner'];

const LIMIT_NAMES = Object.keys(DEFAULT_HTTP_LIMITS) as (keyof HttpLimits)[];

/**
 * Settings from text such as `maxConnections=64,headersTimeoutMs=5000` (the `SLUICE_HTTP_LIMITS`
 * environment variable). Unknown names and values that are not positive integers are refused.
 */
export function parseHttpLimits(text: string | undefined): Partial<HttpLimits> {
  const out: Partial<HttpLimits> = {};
  if (text === undefined || text.trim() === '') return out;
  for (const part of text.split(',')) {
    const [rawName, rawValue] = part.split('=');
    const name = rawName?.trim() as keyof HttpLimits;
    const value = Number(rawValue?.trim());
    if (!LIMIT_NAMES.includes(name)) {
      throw new SluiceError(
        'invalid_params',
        `SLUICE_HTTP_LIMITS: unknown limit "${rawName?.trim()}" (known: ${LIMIT_NAMES.join(', ')})`,
      );
    }
    if (SWITCHES.includes(name)) {
      if (value !== 0 && value !== 1) {
        throw new SluiceError(
          'invalid_params',
          `SLUICE_HTTP_LIMITS: ${name} must be 0 or 1, not "${rawValue?.trim()}"`,
        );
      }
    } else if (!Number.isSafeInteger(value) || value <= 0) {
      throw new SluiceError(
        'invalid_params',
        `SLUICE_HTTP_LIMITS: ${name} must be a positive integer, not "${rawValue?.trim()}"`,
      );
    }
    out[name] = value;
  }
  return out;
}

/** Node's http.createServer options for these limits (Fastify passes them through as `http`). */
export function nodeServerOptions(limits: HttpLimits) {
  // The deadlines are Sluice's own timers per socket (socket-deadlines.ts): Node checks these on a
  // periodic sweep that did not hold under keep-alive traffic. They stay, 30 s looser, as a backstop.
  const requestTimeout = limits.requestTimeoutMs + 30_000;
  return {
    headersTimeout: Math.min(limits.headersTimeoutMs + 30_000, requestTimeout),
    requestTimeout,
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
  };
}

/** True when the request announces a body (a length above zero, or chunked). */
export function declaresBody(req: FastifyRequest): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined && length !== '0') return true;
  return req.headers['transfer-encoding'] !== undefined;
}

/**
 * Hooks that keep the server from reading what it will not use: a body sent to an unknown route
 * is refused unread (413), and any error answered while a body is still unread closes the
 * connection instead of draining it. The server-wide socket limits are set here too.
 */
export function installRequestLimits(app: FastifyInstance, limits: HttpLimits): void {
  app.server.maxConnections = limits.maxConnections;
  app.server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.is404 && declaresBody(req)) {
      return reply
        .code(413)
        .header('connection', 'close')
        .send({ error: { code: 'too_large', message: 'this route accepts no request body' } });
    }
  });
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode >= 400 && declaresBody(req) && !req.raw.complete) {
      reply.header('connection', 'close');
    }
    return payload;
  });
}

/** A 429 with one line and `Retry-After`, closing the connection when a body is left unread. */
export function answerBusy(reply: FastifyReply, what: string, max: number): FastifyReply {
  return reply
    .code(429)
    .header('retry-after', '1')
    .send({
      error: { code: 'busy', message: `at most ${max} ${what} at once per principal; retry when one ends` },
    });
}

/** An onRequest hook that admits or refuses a request with a body (capBodiesPerPrincipal). */
export type BodyCap = (req: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;

/**
 * An onRequest hook (registered after authentication) that admits at most `max` requests with a
 * body per principal at once; the slot frees when the response ends or the connection closes.
 * The count lives in the hook: register the same hook on every route it bounds together.
 */
export function capBodiesPerPrincipal(max: number): BodyCap {
  const gate = new PrincipalGate(max);
  return async (req: FastifyRequest, reply: FastifyReply) => {
    if (!req.principal || !declaresBody(req)) return;
    const release = gate.tryEnter(req.principal.id);
    if (!release) return answerBusy(reply, 'requests with a body', max);
    reply.raw.once('close', release);
  };
}
