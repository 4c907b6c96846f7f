import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, type KyselyPlugin, Migrator, SqliteDialect, sql, UpdateQueryNode } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { openHost } from '../../src/host/identity/home.js';
import { authenticateToken, hashToken, issueAccessToken } from '../../src/host/identity/principals.js';
import { lastUseNotRecorded } from '../../src/host/identity/record-use.js';
import {
  authenticateSession,
  endSession,
  findUsableLoginLinkPrincipal,
  issueLoginCode,
  listCredentials,
  revokeCredential,
  signInWithCode,
} from '../../src/host/identity/sessions.js';
import type { Database } from '../../src/store/schema.js';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { tempHome } from '../support/host.js';

/** The host's context with a clock the test moves. */
function withClock(ctx: HostContext, start = Date.parse('2026-06-01T12:00:00Z')) {
  let t = start;
  return {
    ctx: { ...ctx, now: () => new Date(t) } as HostContext,
    advance(ms: number) {
      t += ms;
    },
  };
}

const MINUTE = 60_000;

describe.each(backendsUnderTest())('sessions and tokens (%s)', (backend) => {
  let h: ConformanceHost;
  afterEach(async () => {
    await h?.close();
  });

  it('a login code signs in exactly once, within 10 minutes, and only a person', async () => {
    h = await openConformanceHost(backend, 'sessions');
    const clock = withClock(h.ctx);
    const { code } = await issueLoginCode(clock.ctx, 'owner');
    expect(await findUsableLoginLinkPrincipal(clock.ctx, code)).toBe('owner');
    const first = await signInWithCode(clock.ctx, code);
    expect(first?.principal.name).toBe('owner');
    expect(await signInWithCode(clock.ctx, code)).toBeUndefined();
    expect(await findUsableLoginLinkPrincipal(clock.ctx, code)).toBeUndefined();

    const late = await issueLoginCode(clock.ctx, 'owner');
    clock.advance(10 * MINUTE);
    expect(await signInWithCode(clock.ctx, late.code)).toBeUndefined();

    await h.agent('helper');
    await expect(issueLoginCode(clock.ctx, 'helper')).rejects.toMatchObject({ code: 'invalid_params' });
  });

  it('two sign-ins racing with one code start one session', async () => {
    h = await openConformanceHost(backend, 'sessions_race');
    const { code } = await issueLoginCode(h.ctx, 'owner');
    const results = await Promise.all(Array.from({ length: 8 }, () => signInWithCode(h.ctx, code)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('a session is stored only as a hash, expires, and ends on logout or revoke', async () => {
    h = await openConformanceHost(backend, 'sessions_end');
    const clock = withClock(h.ctx);
    const s = await signInWithCode(clock.ctx, (await issueLoginCode(clock.ctx, 'owner')).code);
    if (!s) throw new Error('no session');
    const stored = await h.ctx.store.db.selectFrom('sessions').selectAll().execute();
    expect(JSON.stringify(stored)).not.toContain(s.secret);
    expect(stored[0]?.secret_hash).toBe(hashToken(s.secret));
    // A session secret is not an access token.
    expect(await authenticateToken(clock.ctx, s.secret)).toBeUndefined();
    expect((await authenticateSession(clock.ctx, s.secret))?.principal.name).toBe('owner');
    clock.advance(7 * 24 * 60 * MINUTE);
    expect(await authenticateSession(clock.ctx, s.secret)).toBeUndefined();

    const t = await signInWithCode(clock.ctx, (await issueLoginCode(clock.ctx, 'owner')).code);
    const u = await signInWithCode(clock.ctx, (await issueLoginCode(clock.ctx, 'owner')).code);
    if (!t || !u) throw new Error('no session');
    expect(await endSession(clock.ctx, t.secret)).toBe(true);
    expect(await authenticateSession(clock.ctx, t.secret)).toBeUndefined();
    expect(await revokeCredential(clock.ctx, u.id)).toBe('session');
    expect(await authenticateSession(clock.ctx, u.secret)).toBeUndefined();
  });

  it('access tokens expire, are listed without secrets, record their last use and can be revoked', async () => {
    h = await openConformanceHost(backend, 'tokens');
    const clock = withClock(h.ctx);
    const short = await issueAccessToken(clock.ctx, 'owner', { expiresInMs: 60 * MINUTE });
    const forever = await issueAccessToken(clock.ctx, 'owner', { expiresInMs: null });
    const byDefault = await issueAccessToken(clock.ctx, 'owner');
    expect(byDefault.expiresAt).toBe(
      new Date(clock.ctx.now().getTime() + 90 * 24 * 60 * MINUTE).toISOString(),
    );
    expect((await authenticateToken(clock.ctx, short.token))?.name).toBe('owner');

    const listed = await listCredentials(clock.ctx);
    const text = JSON.stringify(listed);
    for (const secret of [short.token, forever.token, byDefault.token]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(hashToken(secret));
    }
    expect(listed.find((r) => r.id === short.id)).toMatchObject({
      kind: 'token',
      principal: 'owner',
      lastUsed: clock.ctx.now().toISOString(),
    });
    expect(listed.find((r) => r.id === forever.id)).toMatchObject({ expires: null, lastUsed: null });

    clock.advance(60 * MINUTE);
    expect(await authenticateToken(clock.ctx, short.token)).toBeUndefined();
    expect(await authenticateToken(clock.ctx, forever.token)).toBeDefined();
    expect(await revokeCredential(clock.ctx, forever.id)).toBe('token');
    expect(await authenticateToken(clock.ctx, forever.token)).toBeUndefined();
    await expect(revokeCredential(clock.ctx, forever.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('a last-use update stopped by a full disk does not fail the request, and is retried when due again', async () => {
    h = await openConformanceHost(backend, 'tokens_touch_fault');
    const clock = withClock(h.ctx);
    const issued = await issueAccessToken(clock.ctx, 'owner');
    const s = await signInWithCode(clock.ctx, (await issueLoginCode(clock.ctx, 'owner')).code);
    if (!s) throw new Error('no session');
    let updateFails: Error | undefined;
    let updatesTried = 0;
    // Every UPDATE fails the way the driver reports it (reads still work, as on a full disk).
    const failingUpdates: KyselyPlugin = {
      transformQuery(args) {
        if (UpdateQueryNode.is(args.node)) {
          updatesTried++;
          if (updateFails) throw updateFails;
        }
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    const faulty = {
      ...clock.ctx,
      store: { ...clock.ctx.store, db: clock.ctx.store.db.withPlugin(failingUpdates) },
    } as HostContext;
    const diskFull = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    updateFails = diskFull;
    const countedBefore = lastUseNotRecorded(faulty);
    clock.advance(2 * MINUTE);
    expect((await authenticateToken(faulty, issued.token))?.name).toBe('owner');
    expect((await authenticateSession(faulty, s.secret))?.principal.name).toBe('owner');
    expect(updatesTried).toBe(2);
    expect(lastUseNotRecorded(faulty) - countedBefore).toBe(2);
    // Counted per store: another host in the same process (here the same host's healthy store
    // object) shows none of it, so its /healthz does not depend on what ran before.
    expect(lastUseNotRecorded(clock.ctx)).toBe(0);
    // Not tried again on every request: only once the next touch is due.
    clock.advance(MINUTE / 2);
    expect((await authenticateToken(faulty, issued.token))?.name).toBe('owner');
    expect(updatesTried).toBe(2);
    // Space freed, the touch due again: the use is recorded.
    updateFails = undefined;
    clock.advance(MINUTE);
    expect((await authenticateToken(faulty, issued.token))?.name).toBe('owner');
    expect(updatesTried).toBe(3);
    const listed = await listCredentials(clock.ctx);
    expect(listed.find((r) => r.id === issued.id)?.lastUsed).toBe(clock.ctx.now().toISOString());
    // A bug in that write is still a bug: it fails the request.
    updateFails = new TypeError('not a fault');
    clock.advance(2 * MINUTE);
    await expect(authenticateToken(faulty, issued.token)).rejects.toThrow('not a fault');
  });

  it('a token minted before expiries existed (no id given, no expiry) keeps working and can be revoked', async () => {
    h = await openConformanceHost(backend, 'tokens_legacy');
    const legacy = 'slu_legacy-token-from-before-migration-003';
    const hash = hashToken(legacy);
    // What migration 003 leaves for an old row: a derived id, no expiry, no last use.
    await sql`insert into tokens (token_hash, principal_id, created_at, id, expires_at, last_used_at)
      values (${hash}, ${h.owner.id}, '2025-01-01T00:00:00.000Z', ${`tok_${hash.slice(0, 16)}`}, null, null)`.execute(
      h.ctx.store.db,
    );
    expect((await authenticateToken(h.ctx, legacy))?.name).toBe('owner');
    expect(await revokeCredential(h.ctx, `tok_${hash.slice(0, 16)}`)).toBe('token');
    expect(await authenticateToken(h.ctx, legacy)).toBeUndefined();
  });
});

describe('migration 003 on a home that already has tokens', () => {
  it('keeps a token minted before expiries working, with a derived id and no expiry', async () => {
    const { home, cleanup } = tempHome();
    try {
      const db = new Kysely<Database>({
        dialect: new SqliteDialect({ database: new BetterSqlite3(join(home, 'sluice.db')) }),
      });
      const result = await new Migrator({ db, provider: sqliteMigrations }).migrateTo('001_initial');
      expect(result.error).toBeUndefined();
      const legacy = 'slu_minted-by-an-older-sluice-serve';
      await sql`insert into principals (id, name, kind, settlement, created_at)
        values ('p_old', 'owner', 'person', 'explicit', '2025-01-01T00:00:00.000Z')`.execute(db);
      await sql`insert into tokens (token_hash, principal_id, created_at)
        values (${hashToken(legacy)}, 'p_old', '2025-01-01T00:00:00.000Z')`.execute(db);
      await db.destroy();

      const ctx = await openHost({ home, durability: 'normal' });
      try {
        expect((await authenticateToken(ctx, legacy))?.name).toBe('owner');
        const [row] = (await listCredentials(ctx)).filter((r) => r.kind === 'token');
        expect(row).toMatchObject({
          id: `tok_${hashToken(legacy).slice(0, 16)}`,
          expires: null,
          principal: 'owner',
        });
      } finally {
        await ctx.store.close();
      }
    } finally {
      cleanup();
    }
  });
});
