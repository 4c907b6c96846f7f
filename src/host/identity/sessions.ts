import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import { findPrincipalById } from '../../store/ops/principals.js';
import {
  consumeLoginLink,
  deleteExpiredLoginLinks,
  deleteExpiredSessions,
  deleteSession,
  findSessionBySecretHash,
  findUsableLoginLink,
  insertLoginLink,
  insertSession,
  listSessions,
  type SessionListing,
  touchSession,
} from '../../store/ops/sessions.js';
import { deleteToken, listTokens, type TokenListing } from '../../store/ops/tokens.js';
import { type HostContext, newId } from './context.js';
import { hashToken, type Principal, resolvePrincipal } from './principals.js';
import { recordUse } from './record-use.js';

/** Named settings for browser sign-in. */
export interface SessionSettings {
  /** How long a login link can be followed (single use). */
  loginLinkTtlMs: number;
  /** How long a browser session lasts after sign-in (absolute, like Grafana's maximum lifetime). */
  sessionTtlMs: number;
}

export const DEFAULT_SESSION_SETTINGS: SessionSettings = {
  loginLinkTtlMs: 10 * 60 * 1000,
  sessionTtlMs: 7 * 24 * 3600 * 1000,
};

/** A session's last activity is recorded at most this often. */
const SESSION_TOUCH_INTERVAL_MS = 60_000;
/** Session secrets and login codes are 32 random bytes; anything longer is not one of ours. */
const MAX_SECRET_LENGTH = 128;

const secret = (ctx: HostContext, prefix: string) =>
  `${prefix}${Buffer.from(ctx.random(32)).toString('base64url')}`;
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Mints a single-use login code for a person; the link is `/login?code=<code>`. Agents sign in
 * with access tokens, never in a browser.
 */
export async function issueLoginCode(
  ctx: HostContext,
  name: string,
  settings: Partial<SessionSettings> = {},
): Promise<{ code: string; principal: string; expiresAt: string }> {
  const principal = await resolvePrincipal(ctx, name);
  if (principal.kind !== 'person')
    throw new SluiceError(
      'invalid_params',
      `${principal.name} is an agent: agents use access tokens (sluice token ${principal.name}), not login links`,
    );
  const ttl = settings.loginLinkTtlMs ?? DEFAULT_SESSION_SETTINGS.loginLinkTtlMs;
  const now = ctx.now().getTime();
  const code = secret(ctx, 'sll_');
  await deleteExpiredLoginLinks(ctx.store.db, iso(now));
  await insertLoginLink(ctx.store.db, {
    code_hash: hashToken(code),
    principal_id: principal.id,
    created_at: iso(now),
    expires_at: iso(now + ttl),
    used_at: null,
  });
  return { code, principal: principal.name, expiresAt: iso(now + ttl) };
}

/** The person a login code would sign in, while it is unused and unexpired (the GET page shows it). */
export async function findUsableLoginLinkPrincipal(
  ctx: HostContext,
  code: unknown,
): Promise<string | undefined> {
  if (typeof code !== 'string' || code.length === 0 || code.length > MAX_SECRET_LENGTH) return undefined;
  const link = await findUsableLoginLink(ctx.store.db, hashToken(code), ctx.now().toISOString());
  return link ? (await findPrincipalById(ctx.store.db, link.principal_id))?.name : undefined;
}

export interface StartedSession {
  /** Public handle (listed by `sluice token ls`, revoked by `sluice token revoke`). */
  id: string;
  /** The cookie value: shown to the browser once, stored only as a hash. */
  secret: string;
  principal: Principal;
  expiresAt: string;
}

/**
 * Spends a login code (once, even under races) and starts a server-side session for its person.
 * Undefined when the code is unknown, used or expired.
 */
export async function signInWithCode(
  ctx: HostContext,
  code: unknown,
  settings: Partial<SessionSettings> = {},
): Promise<StartedSession | undefined> {
  if (typeof code !== 'string' || code.length === 0 || code.length > MAX_SECRET_LENGTH) return undefined;
  const now = ctx.now().getTime();
  const principalId = await consumeLoginLink(ctx.store.db, hashToken(code), iso(now));
  if (!principalId) return undefined;
  const principal = await findPrincipalById(ctx.store.db, principalId);
  if (!principal) return undefined;
  const ttl = settings.sessionTtlMs ?? DEFAULT_SESSION_SETTINGS.sessionTtlMs;
  const session: StartedSession = {
    id: newId(ctx, 'ses'),
    secret: secret(ctx, 'sls_'),
    principal,
    expiresAt: iso(now + ttl),
  };
  await deleteExpiredSessions(ctx.store.db, iso(now));
  await insertSession(ctx.store.db, {
    id: session.id,
    secret_hash: hashToken(session.secret),
    principal_id: principal.id,
    created_at: iso(now),
    expires_at: session.expiresAt,
    last_seen_at: iso(now),
  });
  return session;
}

/** The session and person behind a cookie value, if it is current; records the activity. */
export async function authenticateSession(
  ctx: HostContext,
  sessionSecret: unknown,
): Promise<{ sessionId: string; principal: Principal } | undefined> {
  if (
    typeof sessionSecret !== 'string' ||
    sessionSecret.length === 0 ||
    sessionSecret.length > MAX_SECRET_LENGTH
  )
    return undefined;
  const found = await findSessionBySecretHash(ctx.store.db, hashToken(sessionSecret));
  const now = ctx.now().getTime();
  if (!found || found.session.expires_at <= iso(now)) return undefined;
  const staleBefore = iso(now - SESSION_TOUCH_INTERVAL_MS);
  // Checked here first: an UPDATE that matches nothing still takes SQLite's write lock.
  if (found.session.last_seen_at < staleBefore)
    await recordUse(ctx, found.session.id, now, SESSION_TOUCH_INTERVAL_MS, () =>
      touchSession(ctx.store.db, found.session.id, iso(now), staleBefore),
    );
  return { sessionId: found.session.id, principal: found.principal };
}

/** Ends the session a cookie value names (log out); true when there was one. */
export async function endSession(ctx: HostContext, sessionSecret: unknown): Promise<boolean> {
  const found = await authenticateSession(ctx, sessionSecret);
  return found ? deleteSession(ctx.store.db, found.sessionId) : false;
}

/** One row of `sluice token ls`: an access token or a browser session, never a secret. */
export interface CredentialListing {
  id: string;
  kind: 'token' | 'session';
  principal: string;
  created: string;
  expires: string | null;
  lastUsed: string | null;
  /** A token's note (`token create --note`); null for sessions and tokens without one. */
  note: string | null;
}

/** Access tokens and current browser sessions, oldest first within each kind. */
export async function listCredentials(ctx: HostContext): Promise<CredentialListing[]> {
  const tokens: TokenListing[] = await listTokens(ctx.store.db);
  const sessions: SessionListing[] = await listSessions(ctx.store.db, ctx.now().toISOString());
  return [
    ...tokens.map((t) => ({
      id: t.id,
      kind: 'token' as const,
      principal: t.principal,
      created: t.created_at,
      expires: t.expires_at,
      lastUsed: t.last_used_at,
      note: t.note,
    })),
    ...sessions.map((s) => ({
      id: s.id,
      kind: 'session' as const,
      principal: s.principal,
      created: s.created_at,
      expires: s.expires_at,
      lastUsed: s.last_seen_at,
      note: null,
    })),
  ];
}

/** Revokes an access token or ends a browser session by its public id. */
export async function revokeCredential(ctx: HostContext, id: string): Promise<'token' | 'session'> {
  if (typeof id === 'string' && id.length <= MAX_SECRET_LENGTH) {
    if (await deleteToken(ctx.store.db, id)) return 'token';
    if (await deleteSession(ctx.store.db, id)) return 'session';
  }
  throw new SluiceError('not_found', `no token or session with id ${quoteInput(id)} (see sluice token ls)`);
}
