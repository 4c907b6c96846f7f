import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HostContext } from '../../host/identity/index.js';
import {
  endSession,
  findUsableLoginLinkPrincipal,
  type SessionSettings,
  signInWithCode,
} from '../../host/identity/index.js';
import { clearedSessionCookie, cookieValue, isOwnPageRequest, sessionCookie } from './auth.js';
import { pageStyleLinks } from './page-styles.js';

const FORM_BODY_LIMIT = 4096;

/** Minimal HTML escaping for the few values the login page shows. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * A page the host renders, in the web page's stylesheet (`links`: page-styles.ts) and its card: the
 * same colours, fonts, buttons and focus ring as the signed-out notice the page itself draws.
 */
function page(title: string, body: string, links: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><title>${escapeHtml(title)} · Sluice</title>${links}</head><body><main class="notice">${body}</main></body></html>`;
}

function linkUnusable(links: string): string {
  return page(
    'Login link not valid',
    '<h1>That login link is not valid</h1><p>Login links work once and for 10 minutes. Run <code>sluice login-link</code> for a fresh one.</p>',
    links,
  );
}

function html(reply: FastifyReply, status: number, text: string) {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(text);
}

/**
 * `GET /login?code=…` shows who the link signs in and a button; only `POST /login` (the button)
 * spends the code and sets the session cookie, so a link a hostile page opens in the background
 * or a prefetcher follows signs nobody in (login CSRF). `POST /logout` ends the session.
 */
export async function registerLoginRoutes(
  app: FastifyInstance,
  ctx: HostContext,
  options: { secureCookie: boolean; settings?: Partial<SessionSettings>; webRoot: string },
): Promise<void> {
  const settings = options.settings ?? {};
  const links = () => pageStyleLinks(options.webRoot);
  app.get('/login', async (req, reply) => {
    const code = (req.query as { code?: unknown }).code;
    const person = await findUsableLoginLinkPrincipal(ctx, code);
    if (!person) return html(reply, 401, linkUnusable(await links()));
    return html(
      reply,
      200,
      page(
        'Sign in',
        `<h1>Sign in to Sluice</h1><p>This link signs this browser in as <strong>${escapeHtml(person)}</strong>. If you did not ask for it, close this page.</p>` +
          `<form method="post" action="/login"><input type="hidden" name="code" value="${escapeHtml(String(code))}"><button type="submit" class="button primary">Sign in as ${escapeHtml(person)}</button></form>`,
        await links(),
      ),
    );
  });

  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
      (_req, body, done) => done(null, new URLSearchParams(String(body))),
    );
    // Logout has no body worth reading; any type is accepted and ignored.
    scope.addContentTypeParser('*', { bodyLimit: FORM_BODY_LIMIT }, (_req, _payload, done) =>
      done(null, undefined),
    );

    scope.post('/login', async (req, reply) => {
      const code = req.body instanceof URLSearchParams ? req.body.get('code') : undefined;
      const session = await signInWithCode(ctx, code, settings);
      if (!session) return html(reply, 401, linkUnusable(await links()));
      const maxAgeS = (Date.parse(session.expiresAt) - ctx.now().getTime()) / 1000;
      return reply
        .header(
          'set-cookie',
          sessionCookie(app.sessionCookieName, session.secret, maxAgeS, options.secureCookie),
        )
        .header('cache-control', 'no-store')
        .redirect('/', 303);
    });

    scope.post('/logout', async (req: FastifyRequest, reply) => {
      const secret = cookieValue(req.headers.cookie, app.sessionCookieName);
      const ended = secret !== undefined && isOwnPageRequest(req) ? await endSession(ctx, secret) : false;
      return reply
        .header('set-cookie', clearedSessionCookie(app.sessionCookieName, options.secureCookie))
        .header('cache-control', 'no-store')
        .send({ ended });
    });
  });
}
