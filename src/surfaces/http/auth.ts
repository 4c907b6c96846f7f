import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HostContext } from '../../host/context.js';
import { authenticateToken, type Principal } from '../../host/principals.js';

/** The browser session cookie: the access token itself, http-only and same-site only. */
export const SESSION_COOKIE = 'sluice_session';
const COOKIE_MAX_AGE_S = 30 * 24 * 3600;

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** The bearer token of a request: the Authorization header, else the session cookie. */
export function requestToken(req: FastifyRequest): { token: string; via: 'bearer' | 'cookie' } | undefined {
  const header = req.headers.authorization;
  if (typeof header === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match?.[1]) return { token: match[1], via: 'bearer' };
  }
  const cookie = cookieValue(req.headers.cookie, SESSION_COOKIE);
  return cookie ? { token: cookie, via: 'cookie' } : undefined;
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

/** Set-Cookie value for a browser session. */
export function sessionCookie(token: string): string {
  return `${SESSION_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${COOKIE_MAX_AGE_S}`;
}

/**
 * A cookie rides along on any request the browser makes, so a cookie-authenticated request that
 * names another origin (a cross-site WebSocket or form) is refused; bearer requests carry their
 * own proof.
 */
function sameOrigin(req: FastifyRequest): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/** A preValidation hook that sets `req.principal` or answers 401/403 with one clear line. */
export function requireAuth(ctx: HostContext) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const found = requestToken(req);
    const principal = found ? await authenticateToken(ctx, found.token) : undefined;
    if (!found || !principal) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .send({
          error: { code: 'unauthenticated', message: 'a valid bearer token or session cookie is required' },
        });
    }
    if (found.via === 'cookie' && !sameOrigin(req)) {
      return reply
        .code(403)
        .send({ error: { code: 'denied', message: 'cross-origin requests need a bearer token' } });
    }
    req.principal = principal;
  };
}
