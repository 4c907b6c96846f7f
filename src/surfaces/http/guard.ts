import { isIP } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The page's Content-Security-Policy: everything from this origin only, no inline script or style,
 * never framed, forms post only here. `connect-src 'self'` covers the page's own WebSocket
 * (CSP Level 3 maps 'self' to ws:/wss: on the same host and port).
 */
export const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every response: no framing, no referrer (login links carry a code), no sniffing. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
};

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '::1'];
const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '']);

/** Which Host and Origin values this server answers, built from how it was started. */
export interface HostAllowList {
  /** True when the `Host` header names this server. */
  allowsHost(hostHeader: string | undefined): boolean;
  /** True when a browser `Origin` is this server's own page. */
  allowsOrigin(origin: string): boolean;
  /** The names accepted, for the refusal message. */
  readonly names: readonly string[];
}

/** `[::1]:7777` → `::1`; `Example.COM.:80` → `example.com`; undefined when unparseable. */
export function hostnameOf(hostHeader: string): string | undefined {
  const text = hostHeader.trim().toLowerCase();
  if (text === '') return undefined;
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) return undefined;
    const rest = text.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return text.slice(1, end);
  }
  const colon = text.indexOf(':');
  const name = colon < 0 ? text : text.slice(0, colon);
  if (colon >= 0 && !/^\d{1,5}$/.test(text.slice(colon + 1))) return undefined;
  return name.replace(/\.$/, '');
}

/**
 * The allow-list: the loopback names (127.0.0.1, localhost, [::1]), the bound address when it is a
 * specific one, and the names given with `--allowed-host`. A page on a rebinding domain
 * (`evil.example` resolving to 127.0.0.1) sends its own name as Host and is refused; the hostname
 * decides, so the check holds whatever port a proxy or test harness puts in the header. Origins
 * must match scheme-less host *and* port for loopback names (another local service on another port
 * is another origin); configured names may come through a proxy on any port.
 */
export function createHostAllowList(options: {
  bindHost: string;
  port: () => number;
  allowedHosts?: readonly string[];
}): HostAllowList {
  const local = new Set(LOOPBACK_NAMES);
  const bind = options.bindHost.replace(/^\[|\]$/g, '').toLowerCase();
  if (!WILDCARD_BINDS.has(bind)) local.add(bind);
  const configured = new Set(
    (options.allowedHosts ?? []).map((h) => hostnameOf(h) ?? h.toLowerCase()).filter((h) => h !== ''),
  );
  return {
    names: [...local, ...configured],
    allowsHost(hostHeader) {
      if (typeof hostHeader !== 'string') return false;
      const name = hostnameOf(hostHeader);
      return name !== undefined && (local.has(name) || configured.has(name));
    },
    allowsOrigin(origin) {
      let url: URL;
      try {
        url = new URL(origin);
      } catch {
        return false;
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
      const name = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
      if (configured.has(name)) return true;
      const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
      return local.has(name) && port === options.port();
    },
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** True for requests that change state or open a long-lived channel (a WebSocket). */
export function isStateChanging(req: FastifyRequest): boolean {
  const upgrade = req.headers.upgrade;
  return (
    !SAFE_METHODS.has(req.method) || (typeof upgrade === 'string' && upgrade.toLowerCase() === 'websocket')
  );
}

/**
 * Registers the first hook every request meets: a Host outside the allow-list is 421 (DNS
 * rebinding), and a browser Origin or `Sec-Fetch-Site: cross-site` on a state-changing request or
 * WebSocket upgrade is 403 (CSRF, cross-site WebSocket hijacking); then the security headers on
 * every reply, and the page's CSP wherever a route did not set a stricter one (media: sandbox).
 */
export function registerRequestGuard(app: FastifyInstance, allow: HostAllowList): void {
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (!allow.allowsHost(req.headers.host)) {
      return reply.code(421).send({
        error: {
          code: 'denied',
          message: `this host answers only to ${allow.names.join(', ')}; start it with --allowed-host NAME to add a name`,
        },
      });
    }
    if (isStateChanging(req)) {
      const origin = req.headers.origin;
      const site = req.headers['sec-fetch-site'];
      // Under `Referrer-Policy: no-referrer` a browser sends `Origin: null` even for the page's own
      // form posts and fetches; then Sec-Fetch-Site must vouch for it.
      const crossOrigin =
        typeof origin === 'string' &&
        (origin === 'null' ? site !== 'same-origin' : !allow.allowsOrigin(origin));
      const crossSite = typeof site === 'string' && site !== 'same-origin' && site !== 'none';
      if (crossOrigin || crossSite) {
        return reply
          .code(403)
          .send({ error: { code: 'denied', message: 'cross-origin requests are refused' } });
      }
    }
  });
  app.addHook('onSend', async (_req, reply, payload) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', PAGE_CSP);
    return payload;
  });
}

/** True for a loopback address (127.0.0.0/8, ::1) or `localhost`: traffic that never leaves the machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
  return false;
}
