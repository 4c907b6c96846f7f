// `sluice token create NAME --note TEXT`: the note is stored (migration 014, both backends) and
// shown by `token ls`; the secret stays alone on stdout with one line on stderr saying how to use it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { issueAccessToken, MAX_TOKEN_NOTE_LENGTH } from '../../src/host/identity/principals.js';
import { listCredentials } from '../../src/host/identity/sessions.js';
import { backendsUnderTest, openConformanceHost } from '../conformance/backend.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, type TestHost } from '../support/host.js';

describe.each(backendsUnderTest())('token notes on %s', (backend) => {
  it('keeps the note of a token, null without one; refuses a note too long or with control characters, storing nothing', async () => {
    const h = await openConformanceHost(backend, 'token_notes');
    try {
      await h.agent('ci');
      const noted = await issueAccessToken(h.ctx, 'ci', { note: '  GitHub Actions deploy  ' });
      const plain = await issueAccessToken(h.ctx, 'ci');
      for (const bad of ['x'.repeat(MAX_TOKEN_NOTE_LENGTH + 1), 'two\nlines', 'tab\there']) {
        const err = await issueAccessToken(h.ctx, 'ci', { note: bad }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(SluiceError);
        expect((err as SluiceError).code).toBe('invalid_params');
      }
      const tokens = (await listCredentials(h.ctx)).filter((c) => c.kind === 'token');
      // Two tokens made in the same millisecond may list in either order: compare by id.
      const byId = (a: [string, string | null], b: [string, string | null]) => a[0].localeCompare(b[0]);
      expect(tokens.map((t): [string, string | null] => [t.id, t.note ?? null]).sort(byId)).toEqual(
        (
          [
            [noted.id, 'GitHub Actions deploy'],
            [plain.id, null],
          ] as [string, string | null][]
        ).sort(byId),
      );
    } finally {
      await h.close();
    }
  });
});

describe('sluice token create', () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
    await h.agent('ci');
  });
  afterAll(async () => h.close());
  const cli = (...args: string[]) => runCliHere(args, { home: h.home });

  it('prints the secret alone on stdout and one usage line on stderr; token ls shows the note', async () => {
    const made = await cli('token', 'create', 'ci', '--note', 'GitHub Actions', '--expires', '30d');
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/^slu_[A-Za-z0-9_-]{43}\n$/);
    const usage = made.stderr.trimEnd().split('\n');
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatch(
      /^shown once: send it as "Authorization: Bearer <token>".*sluice token revoke tok_\w+ ends it$/,
    );
    expect(made.stderr).not.toContain(made.stdout.trim());

    const older = await cli('token', 'ci', '--note', 'the older form');
    expect(older.code).toBe(0);
    expect(older.stdout).toMatch(/^slu_/);

    const table = await cli('token', 'ls');
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+KIND\s+PRINCIPAL\s+CREATED\s+EXPIRES\s+LAST USED\s+NOTE$/);
    expect(lines.filter((l) => l.endsWith('GitHub Actions'))).toHaveLength(1);
    expect(lines.filter((l) => l.endsWith('the older form'))).toHaveLength(1);
    const json = JSON.parse((await cli('token', 'ls', '--json')).stdout) as { note: string | null }[];
    expect(json.map((r) => r.note).sort()).toEqual(['GitHub Actions', 'the older form']);
  });

  it('refuses a missing name, an unknown principal and a bad note with one line, creating nothing', async () => {
    const before = (await cli('token', 'ls', '--json')).stdout;
    for (const [args, code] of [
      [['token', 'create'], 1],
      [['token', 'create', 'ghost'], 2],
      [['token', 'create', 'ci', '--note', 'x'.repeat(201)], 1],
    ] as const) {
      const run = await cli(...args);
      expect(run.code, args.join(' ')).toBe(code);
      expect(run.stdout).toBe('');
      expect(run.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
    }
    expect((await cli('token', 'ls', '--json')).stdout).toBe(before);
  });
});
