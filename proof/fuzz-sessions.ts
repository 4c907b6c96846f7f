import fc from 'fast-check';
import { issueAccessToken } from '../src/host/identity/principals.js';
import { issueLoginCode } from '../src/host/identity/sessions.js';
import { PAGE_CSP } from '../src/surfaces/http/guard.js';
import type { FuzzFailure, FuzzReport } from './fuzz-cli.js';
import { openFuzzHost } from './fuzz-rpc.js';

/** What a hostile page, script or proxy can put in the headers that decide who is signed in. */
const junk = fc.oneof(
  fc.constantFrom('', ' ', 'null', '%', '%00', 'a'.repeat(600), '\u202Eevil', 'sll_', 'slu_', 'sls_', '=;=;'),
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.replace(/[^\u0020-\u007e]/g, '')),
);
const hosts = fc.oneof(
  fc.constantFrom(
    '127.0.0.1',
    'localhost',
    '[::1]',
    'evil.example',
    '127.0.0.1.evil.example',
    'localhost.evil',
    '[::1',
    ':',
  ),
  junk,
);
const origins = fc.option(
  fc.oneof(
    fc.constantFrom('null', 'http://evil.example', 'http://127.0.0.1:1', 'file://', 'http://localhost'),
    junk,
  ),
);
const sites = fc.option(fc.constantFrom('same-origin', 'same-site', 'cross-site', 'none', 'bogus'));

/** Which credential slot a request fills, and with what: a real secret, a variant of one, or junk. */
const secretKinds = fc.constantFrom('code', 'spent code', 'token', 'code+x', 'token as code', 'junk');

interface SessionInput {
  route: 'GET /login' | 'POST /login' | 'POST /logout' | 'POST /rpc' | 'GET /media';
  host: string;
  useHostPort: boolean;
  origin: string | null;
  site: string | null;
  secret: string;
  slot: 'query' | 'form' | 'cookie' | 'bearer';
  junk: string;
}

const inputs: fc.Arbitrary<SessionInput> = fc.record({
  route: fc.constantFrom('GET /login', 'POST /login', 'POST /logout', 'POST /rpc', 'GET /media'),
  host: hosts,
  useHostPort: fc.boolean(),
  origin: origins,
  site: sites,
  secret: secretKinds,
  slot: fc.constantFrom('query', 'form', 'cookie', 'bearer'),
  junk,
});

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Hostile sign-in traffic against a real server: any Host, Origin and Sec-Fetch-Site, login codes
 * fresh, spent, altered or swapped for tokens, in the query, a form, a cookie or a bearer header.
 * Every answer is a deliberate status (never 5xx) with the security headers; a Host outside the
 * allow-list is 421 whatever else the request says; a session cookie is set only for a fresh code
 * posted from this origin; no answer echoes a secret it was not given in that very field.
 */
export async function fuzzSessions(runs: number, seed: number): Promise<FuzzReport> {
  const host = await openFuzzHost();
  const failures: FuzzFailure[] = [];
  const port = new URL(host.server.url).port;
  const token = (await issueAccessToken(host.ctx, 'alice')).token;
  const spent = (await issueLoginCode(host.ctx, 'alice')).code;
  await host.server.app.inject({
    method: 'POST',
    url: '/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: `code=${spent}`,
  });
  let count = 0;
  try {
    await fc.assert(
      fc.asyncProperty(inputs, async (input) => {
        count++;
        const fresh = (await issueLoginCode(host.ctx, 'alice')).code;
        const secret = {
          code: fresh,
          'spent code': spent,
          token,
          'code+x': `${fresh}x`,
          'token as code': token,
          junk: input.junk,
        }[input.secret as 'code'];
        const [method, path] = input.route.split(' ') as ['GET' | 'POST', string];
        const headers: Record<string, string> = {
          host: input.useHostPort ? `${input.host}:${port}` : input.host,
        };
        if (input.origin !== null) headers.origin = input.origin;
        if (input.site !== null) headers['sec-fetch-site'] = input.site;
        let url = path === '/media' ? '/media/m_x' : path;
        let payload: string | undefined;
        if (input.slot === 'query')
          url += `?code=${encodeURIComponent(secret)}&token=${encodeURIComponent(secret)}`;
        if (input.slot === 'form') {
          headers['content-type'] = 'application/x-www-form-urlencoded';
          payload = new URLSearchParams({ code: secret }).toString();
        } else if (method === 'POST') {
          headers['content-type'] = 'application/json';
          payload = '{"jsonrpc":"2.0","id":1,"method":"host.hello"}';
        }
        if (input.slot === 'cookie')
          headers.cookie = `${host.server.app.sessionCookieName}=${encodeURIComponent(secret)}`;
        if (input.slot === 'bearer') headers.authorization = `Bearer ${secret}`;
        const label = JSON.stringify({ ...input, secret: input.secret });
        let res: Awaited<ReturnType<typeof host.server.app.inject>>;
        try {
          res = await host.server.app.inject({
            method,
            url,
            headers,
            ...(payload !== undefined ? { payload } : {}),
          });
        } catch (err) {
          failures.push({ input: label, problem: `inject threw ${(err as Error).message}` });
          return;
        }
        if (res.statusCode >= 500) failures.push({ input: label, problem: `answered ${res.statusCode}` });
        if (res.headers['x-frame-options'] !== 'DENY' || res.headers['referrer-policy'] !== 'no-referrer')
          failures.push({ input: label, problem: 'missing security headers' });
        if (res.headers['content-security-policy'] !== PAGE_CSP && !path.startsWith('/media'))
          failures.push({ input: label, problem: 'missing CSP' });
        // The Host the server saw (the injector fills in its own for an empty one).
        const sent = String(res.raw.req.headers.host ?? '');
        const allowedHost = LOOPBACK.has(sent.toLowerCase().replace(/:\d{1,5}$/, ''));
        if (!allowedHost && res.statusCode !== 421 && res.statusCode !== 400)
          failures.push({
            input: label,
            problem: `Host ${JSON.stringify(headers.host)} answered ${res.statusCode}`,
          });
        const setCookie = String(res.headers['set-cookie'] ?? '');
        const signedIn = /sluice_session_\d+=sls_/.test(setCookie);
        const crossSite =
          (input.origin !== null &&
            (input.origin === 'null'
              ? input.site !== 'same-origin'
              : !['http://127.0.0.1', 'http://localhost', 'http://[::1]'].some(
                  (o) => input.origin === `${o}:${port}`,
                ))) ||
          (input.site !== null && input.site !== 'same-origin' && input.site !== 'none');
        if (
          signedIn &&
          (input.route !== 'POST /login' ||
            input.secret !== 'code' ||
            input.slot !== 'form' ||
            crossSite ||
            !allowedHost)
        )
          failures.push({
            input: label,
            problem: 'a session cookie was set for a request that may not sign in',
          });
        if (
          !signedIn &&
          input.route === 'POST /login' &&
          input.secret === 'code' &&
          input.slot === 'form' &&
          !crossSite &&
          allowedHost
        )
          failures.push({
            input: label,
            problem: `a fresh code from this origin did not sign in (${res.statusCode})`,
          });
        for (const s of [token, fresh, spent]) {
          const given = s === secret && (input.slot === 'form' || input.slot === 'query');
          if (!given && res.body.includes(s))
            failures.push({ input: label, problem: 'the answer echoes a secret' });
        }
        if (setCookie.includes(token) || setCookie.includes(fresh))
          failures.push({ input: label, problem: 'a cookie carries a token or login code' });
      }),
      { numRuns: runs, seed },
    );
  } finally {
    await host.close();
  }
  return { surface: 'sessions', inputs: count, failures };
}
