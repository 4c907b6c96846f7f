import { createHash } from 'node:crypto';
import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import { insertAgentManager } from '../../store/ops/agent-managers.js';
import { findChannelByName } from '../../store/ops/channels.js';
import { appendEvent } from '../../store/ops/events.js';
import {
  findPrincipalByName,
  insertPrincipal,
  listPrincipals,
  type PrincipalRow,
  updateSettlement,
} from '../../store/ops/principals.js';
import { insertQueue } from '../../store/ops/queues.js';
import { findTokenByHash, insertToken, touchToken } from '../../store/ops/tokens.js';
import type { PrincipalKind, SettlementMode } from '../../store/schema.js';
import { announceCommit, type HostContext, newId, nowIso } from './context.js';
import { recordUse } from './record-use.js';

export type Principal = PrincipalRow;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Principal names appear in commands and headers, so they are short and shell-safe. */
export function validateName(name: unknown, what = 'name'): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new SluiceError(
      'invalid_params',
      `invalid ${what} ${quoteInput(name)}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  return name;
}

export async function addPrincipal(
  ctx: HostContext,
  input: { name: string; kind: PrincipalKind; settlement?: SettlementMode; managerId?: string },
): Promise<Principal> {
  const name = validateName(input.name);
  const settlement = input.settlement ?? 'explicit';
  if (settlement !== 'explicit' && settlement !== 'turn') {
    throw new SluiceError('invalid_params', `settlement must be explicit or turn, not ${String(settlement)}`);
  }
  const row: Principal = {
    id: newId(ctx, input.kind === 'agent' ? 'ag' : 'p'),
    name,
    kind: input.kind,
    settlement,
    created_at: nowIso(ctx),
  };
  await ctx.store.transaction(async (trx) => {
    if (await findPrincipalByName(trx, name))
      throw new SluiceError('conflict', `a principal named ${name} already exists`);
    await insertPrincipal(trx, row);
    if (input.kind === 'agent') {
      await insertQueue(trx, row.id, newId(ctx, 'g'));
      // Its owner's and its manager's pages list it at once (host/live/live.ts).
      await appendEvent(trx, { kind: 'agent.managers', agent_id: row.id, created_at: row.created_at });
    }
    // The person who added the agent manages it (host/agents/agent-managers.ts), in the same commit.
    if (input.kind === 'agent' && input.managerId !== undefined)
      await insertAgentManager(trx, {
        agent_id: row.id,
        person_id: input.managerId,
        created_at: row.created_at,
      });
  });
  announceCommit(ctx);
  return row;
}

/** Adds the principal unless it exists with the same kind; used by idempotent `init`. */
export async function ensurePrincipal(
  ctx: HostContext,
  name: string,
  kind: PrincipalKind,
): Promise<Principal> {
  const existing = await findPrincipalByName(ctx.store.db, name);
  if (existing) return existing;
  try {
    return await addPrincipal(ctx, { name, kind });
  } catch (err) {
    // Another process added it between the check and the insert (several hosts starting at once).
    const raced = await findPrincipalByName(ctx.store.db, name);
    if (raced) return raced;
    throw err;
  }
}

export async function resolvePrincipal(ctx: HostContext, name: string): Promise<Principal> {
  const found = typeof name === 'string' ? await findPrincipalByName(ctx.store.db, name) : undefined;
  if (!found) throw await principalNotFound(ctx, String(name));
  return found;
}

/** Every principal of a kind (or all), by name. */
export async function listPrincipalsByName(ctx: HostContext, kind?: PrincipalKind): Promise<Principal[]> {
  return listPrincipals(ctx.store.db, kind);
}

/**
 * `not_found` for a name no principal has, with what the user probably meant in the message and
 * in `data` (so every surface shows it): `suggestions`, the closest names, and `channel` when a
 * group channel has that name (a target written without its `#`).
 */
async function principalNotFound(ctx: HostContext, name: string): Promise<SluiceError> {
  const quoted = JSON.stringify(name).slice(0, 80);
  const names = (await listPrincipals(ctx.store.db)).map((p) => p.name);
  const suggestions = closestNames(name, names);
  const group = NAME.test(name) ? await findChannelByName(ctx.store.db, name) : undefined;
  const channel = group?.kind === 'group' ? `#${group.name}` : undefined;
  const hint = channel
    ? ` (did you mean ${channel}? a channel is written with its #)`
    : suggestions.length > 0
      ? ` (did you mean ${suggestions.join(' or ')}?)`
      : '';
  return new SluiceError('not_found', `no principal named ${quoted}${hint}`, {
    name: name.slice(0, 80),
    suggestions,
    ...(channel ? { channel } : {}),
  });
}

/** Names within a small edit distance of `name` (case-insensitive), closest first, at most 3. */
export function closestNames(name: string, candidates: readonly string[]): string[] {
  if (name.length === 0 || name.length > 64) return [];
  const wanted = name.toLowerCase();
  const limit = Math.max(1, Math.min(3, Math.floor(wanted.length / 3)));
  return candidates
    .map((candidate) => ({ candidate, d: editDistance(wanted, candidate.toLowerCase()) }))
    .filter(({ d }) => d <= limit)
    .sort((a, b) => a.d - b.d || a.candidate.localeCompare(b.candidate))
    .slice(0, 3)
    .map(({ candidate }) => candidate);
}

/** Levenshtein distance with adjacent transpositions counted as one edit. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] as number[];
    const prev = rows[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = d;
    }
  }
  return (rows[a.length] as number[])[b.length] as number;
}

export async function resolveAgent(ctx: HostContext, name: string): Promise<Principal> {
  const p = await resolvePrincipal(ctx, name);
  if (p.kind !== 'agent')
    throw new SluiceError('invalid_params', `${name} is a person, not an agent: people have no inbox`);
  return p;
}

export async function setSettlementMode(ctx: HostContext, name: string, mode: SettlementMode): Promise<void> {
  const agent = await resolveAgent(ctx, name);
  await updateSettlement(ctx.store.db, agent.id, mode);
}

/** SHA-256 hex of a secret (tokens, login codes, session ids): the store never holds the secret. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** How long a new access token lives unless the caller says otherwise (a named setting). */
export const DEFAULT_TOKEN_TTL_MS = 90 * 24 * 3600 * 1000;
/** A token's last use is recorded at most this often, so a busy device is not a write per request. */
const TOKEN_TOUCH_INTERVAL_MS = 60_000;

export interface IssuedToken {
  /** Public handle for `sluice token ls` / `sluice token revoke`. */
  id: string;
  /** The secret: shown once, never stored. */
  token: string;
  principal: string;
  expiresAt: string | null;
}

/**
 * Issues a new access token for a principal; only its hash is stored. `expiresInMs` null means
 * no expiry; the default is {@link DEFAULT_TOKEN_TTL_MS}.
 */
export async function issueAccessToken(
  ctx: HostContext,
  name: string,
  options: { expiresInMs?: number | null; note?: string | undefined } = {},
): Promise<IssuedToken> {
  const note = tokenNote(options.note);
  const principal = await resolvePrincipal(ctx, name);
  const ttl = options.expiresInMs === undefined ? DEFAULT_TOKEN_TTL_MS : options.expiresInMs;
  if (ttl !== null && (!Number.isFinite(ttl) || ttl <= 0))
    throw new SluiceError('invalid_params', 'a token expiry must be in the future');
  const token = `slu_${Buffer.from(ctx.random(32)).toString('base64url')}`;
  const now = ctx.now();
  const expiresAt = ttl === null ? null : new Date(now.getTime() + ttl).toISOString();
  const id = newId(ctx, 'tok');
  await insertToken(ctx.store.db, {
    id,
    token_hash: hashToken(token),
    principal_id: principal.id,
    created_at: now.toISOString(),
    expires_at: expiresAt,
    last_used_at: null,
    note,
  });
  return { id, token, principal: principal.name, expiresAt };
}

/** The longest note a token keeps (it is a label for `token ls`, not a document). */
export const MAX_TOKEN_NOTE_LENGTH = 200;

/** A token's note, trimmed; refuses one too long or holding control characters (null when none). */
function tokenNote(note: string | undefined): string | null {
  if (note === undefined) return null;
  const text = note.trim();
  if (text.length > MAX_TOKEN_NOTE_LENGTH)
    throw new SluiceError('invalid_params', `--note is at most ${MAX_TOKEN_NOTE_LENGTH} characters`);
  if (/[\u0000-\u001f\u007f]/.test(text))
    throw new SluiceError('invalid_params', '--note is one line of text (no control characters)');
  return text === '' ? null : text;
}

/** Issues a new access token (default expiry) and returns only the secret. */
export async function issueToken(ctx: HostContext, name: string): Promise<string> {
  return (await issueAccessToken(ctx, name)).token;
}

/**
 * The principal an unexpired access token stands for; records the use (a fault stopping that
 * write does not fail the request: record-use.ts).
 */
export async function authenticateToken(ctx: HostContext, token: unknown): Promise<Principal | undefined> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 512) return undefined;
  const found = await findTokenByHash(ctx.store.db, hashToken(token));
  if (!found) return undefined;
  const now = ctx.now();
  if (found.token.expires_at !== null && found.token.expires_at <= now.toISOString()) return undefined;
  const staleBefore = new Date(now.getTime() - TOKEN_TOUCH_INTERVAL_MS).toISOString();
  // Checked here first: an UPDATE that matches nothing still takes SQLite's write lock.
  if (found.token.last_used_at === null || found.token.last_used_at < staleBefore)
    await recordUse(ctx, found.token.id, now.getTime(), TOKEN_TOUCH_INTERVAL_MS, () =>
      touchToken(ctx.store.db, found.token.id, now.toISOString(), staleBefore),
    );
  return found.principal;
}
