// A mistyped --as (or SLUICE_AS) is refused by every command that opens a home, admin commands
// included: before, `sluice --as ghost person add bob` added bob, and `token ls`, `agent ls` and
// `media gc` ran as if --as had not been given, hiding the typo.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, type TestHost } from '../support/host.js';

describe('an --as naming nobody', () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
    await h.agent('helper');
  });
  afterAll(async () => h.close());
  const cli = (...args: string[]) => runCliHere(args, { home: h.home });

  const commands: string[][] = [
    ['person', 'add', 'bob'],
    ['person', 'ls'],
    ['agent', 'add', 'bot'],
    ['agent', 'ls'],
    ['token', 'helper'],
    ['token', 'ls'],
    ['login-link'],
    ['media', 'gc'],
    ['channel', 'ls'],
  ];

  it.each(commands.map((c) => [c.join(' '), c] as const))(
    '%s: refused with one coded line, nothing changed',
    async (_, command) => {
      const principals = async () =>
        (await h.ctx.store.db.selectFrom('principals').select('name').orderBy('name').execute()).map(
          (r) => r.name,
        );
      const tokens = async () => (await h.ctx.store.db.selectFrom('tokens').select('id').execute()).length;
      const [beforePrincipals, beforeTokens] = [await principals(), await tokens()];
      const run = await cli('--as', 'ghost', ...command);
      expect(run.code).not.toBe(0);
      expect(run.stdout).toBe('');
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/^sluice: not_found: no principal named "ghost" \(named by --as/);
      expect(await principals()).toEqual(beforePrincipals);
      expect(await tokens()).toBe(beforeTokens);
    },
  );

  it('a valid --as still runs the admin command', async () => {
    const run = await cli('--as', 'owner', 'person', 'add', 'carol');
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('carol');
  });
});
