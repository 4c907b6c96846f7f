import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueLoginCode, signInWithCode } from '../../src/host/identity/sessions.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, runCli, type TestHost } from '../support/host.js';

// The CLI in this process; two refusals' exit codes through the built launcher.
describe('sluice token and sluice login-link', { timeout: 180_000 }, () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
    await h.agent('helper');
  });
  afterAll(async () => h.close());
  const cli = (...args: string[]) => runCliHere(args, { home: h.home });

  it('issues an expiring token, lists it (and a browser session) without secrets, and revokes both by id', async () => {
    const issued = await cli('token', 'helper', '--expires', '30d');
    expect(issued.code).toBe(0);
    const token = issued.stdout.trim();
    expect(token).toMatch(/^slu_[A-Za-z0-9_-]{43}$/);
    const session = await signInWithCode(h.ctx, (await issueLoginCode(h.ctx, 'owner')).code);

    const listed = await cli('token', 'ls', '--json');
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(token);
    expect(listed.stdout).not.toContain(session?.secret);
    const rows = JSON.parse(listed.stdout) as {
      id: string;
      kind: string;
      principal: string;
      expires: string;
    }[];
    const row = rows.find((r) => r.kind === 'token' && r.principal === 'helper');
    expect(Date.parse(row?.expires ?? '') - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(rows.find((r) => r.kind === 'session')).toMatchObject({ id: session?.id, principal: 'owner' });

    const table = await cli('token', 'ls');
    expect(table.stderr).toBe('');
    expect(table.stdout.split('\n')[0]).toMatch(
      /^ID\s+KIND\s+PRINCIPAL\s+CREATED\s+EXPIRES\s+LAST USED\s+NOTE$/,
    );

    expect((await cli('token', 'revoke', row?.id as string)).stdout).toBe(`revoked token ${row?.id}\n`);
    expect((await cli('token', 'revoke', session?.id as string)).stdout).toBe(
      `ended session ${session?.id}\n`,
    );
    const again = await cli('token', 'revoke', row?.id as string);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/^sluice: not_found: no token or session with id/);
  });

  it('refuses a bad --expires and a login link for an agent with one line each', async () => {
    for (const [args, code, launcher] of [
      [['token', 'helper', '--expires', '3x'], 1, true],
      [['token', 'helper', '--expires', '0d'], 1, false],
      [['login-link', 'helper'], 1, false],
      [['login-link', 'nobody'], 2, true],
      [['login-link', '--url', 'javascript:alert(1)'], 1, false],
    ] as const) {
      const run = launcher ? await runCli(args, { home: h.home }) : await cli(...args);
      expect(run.code, args.join(' ')).toBe(code);
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stdout).toBe('');
    }
  });

  it('prints a single-use login link for a person at the given host address', async () => {
    const run = await cli('login-link', 'owner', '--url', 'http://localhost:9999/ignored/path');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^http:\/\/localhost:9999\/login\?code=sll_[A-Za-z0-9_-]{43}\n$/);
  });
});
