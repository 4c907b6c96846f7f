import type { FastifyReply, FastifyRequest } from 'fastify';
import { SluiceError } from '../../core/errors.js';
import type { HostContext } from '../../host/identity/index.js';
import { authenticateSession, authenticateToken, type Principal } from '../../host/identity/index.js';
import { markSocketAuthenticated } from './socket-deadlines.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    /**
     * Whether the credential this request came with is still current (not expired, revoked or
     * logged out): a long-lived WebSocket asks again before each request it serves.
     */
    credentialIsCurrent?: () => Promise<boolean>;
  }
  interface FastifyInstance {
    /** This server's session cookie name (it depends on the bound port); '' when it has none. */
    sessionCookieName: string;
  }
}

/**
 * The browser session cookie's name for a port. Browsers send a cookie for 127.0.0.1 to every
 * port of it, so two hosts on one machine would otherwise overwrite each other's session.
 */
export function sessionCookieName(port: number): string {
  return `sluice_session_${port}`;
}

/** The bearer token of the Authorization header, if any. */
export function bearerToken(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** One cookie's value from a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Set-Cookie for a signed-in browser: http-only, same-site only, `Secure` behind TLS. */
export function sessionCookie(name: string, secret: string, maxAgeS: number, secure: boolean): string {
  return `${name}=${encodeURIComponent(secret)}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeS))}${secure ? '; Secure' : ''}`;
}

/** Set-Cookie that removes the session cookie (log out, or a cookie the host no longer knows). */
export function clearedSessionCookie(name: string, secure: boolean): string {
  return sessionCookie(name, '', 0, secure);
}

/**
 * A session cookie counts only on a request the page itself made: the browser says so with
 * `Sec-Fetch-Site: same-origin` (or `none` for a navigation the user typed), or with an Origin the
 * request guard already checked against the allow-list. A script outside the browser that copied
 * the cookie must use an access token instead.
 */
export function isOwnPageRequest(req: FastifyRequest): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || (site === 'none' && req.method === 'GET');
  const origin = req.headers.origin;
  return typeof origin === 'string' && origin !== 'null';
}

export interface AuthOptions {
  /** Whether the page's session cookie is accepted here (false: bearer tokens only, as on MCP). */
  cookie?: boolean;
}

function unauthenticated(reply: FastifyReply, message: string) {
  return reply
    .code(401)
    .header('www-authenticate', 'Bearer')
    .send({ error: { code: 'unauthenticated', message } });
}

/**
 * Who a request behind {@link requireAuth} comes from. A route that forgot the hook gets an
 * `internal` error (a bug), never a request served as nobody.
 */
export function authenticatedPrincipal(req: FastifyRequest): Principal {
  if (!req.principal) throw new SluiceError('internal', 'a route behind requireAuth ran without a principal');
  return req.principal;
}

/**
 * An onRequest hook that sets `req.principal` or answers 401 with one line, before any body is
 * read. An `Authorization: Bearer` header must hold an access token (a session id is not one); a
 * session cookie is accepted unless `cookie: false`, and only from the page itself.
 */
export function requireAuth(ctx: HostContext, options: AuthOptions = {}) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const token = bearerToken(req);
    if (token !== undefined) {
      const principal = await authenticateToken(ctx, token);
      if (!principal) return unauthenticated(reply, 'the bearer token is unknown, expired or revoked');
      req.principal = principal;
      req.credentialIsCurrent = async () => (await authenticateToken(ctx, token))?.id === principal.id;
      markSocketAuthenticated(req.raw.socket);
      return;
    }
    const cookieName = options.cookie === false ? '' : (req.server.sessionCookieName ?? '');
    const cookie = cookieName ? cookieValue(req.headers.cookie, cookieName) : undefined;
    if (cookie === undefined)
      return unauthenticated(
        reply,
        cookieName
          ? 'a bearer access token or a session cookie is required'
          : 'a bearer access token is required',
      );
    if (!isOwnPageRequest(req))
      return unauthenticated(reply, 'a session cookie counts only from the page; use a bearer access token');
    const session = await authenticateSession(ctx, cookie);
    if (!session) return unauthenticated(reply, 'the session has ended; open a new login link');
    req.principal = session.principal;
    markSocketAuthenticated(req.raw.socket);
    req.credentialIsCurrent = async () =>
      (await authenticateSession(ctx, cookie))?.sessionId === session.sessionId;
  };
}
