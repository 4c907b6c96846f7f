// `sluice drive` and `sluice agent settle` refusals: one line, an exit code, nothing changed.
// The refusals run in this process through the CLI's main (runCliHere): they are decided before any
// client starts. The first two run the built CLI in a child process (npm run build first), for the
// exit code and stderr a shell sees.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { claimDriver } from '../../src/host/agents/driver-lock.js';
import { openHost } from '../../src/host/identity/home.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { runCliHere } from '../support/cli-in-process.js';
import { runCli, tempHome } from '../support/host.js';
import { snapshotStore } from '../support/store-snapshot.js';

describe('sluice drive (refusals)', () => {
  let home: string;
  let cleanup: () => void;
  beforeEach(async () => {
    ({ home, cleanup } = tempHome());
    expect((await runCliHere(['init'], { home })).code).toBe(0);
    expect((await runCliHere(['agent', 'add', 'bot'], { home })).code).toBe(0);
  });
  afterEach(() => cleanup());

  test('an explicit agent is refused with the command that fixes it; agent settle switches it', async () => {
    const refused = await runCli(['drive', 'claude', '--as', 'bot'], { home });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'sluice: invalid_params: bot settles explicitly; drivers settle by turns: run sluice agent settle bot turn (or add agents with --settlement turn)\n',
    );
    const settled = await runCliHere(['agent', 'settle', 'bot', 'turn'], { home });
    expect(settled).toMatchObject({ code: 0, stdout: 'bot settles by turns\n' });
    const missing = await runCli(['drive', 'claude', '--as', 'bot'], {
      home,
      env: { PATH: '/nonexistent', SLUICE_CLAUDE_BIN: '' },
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      'sluice: not_found: claude is not on PATH: install @anthropic-ai/claude-code or set SLUICE_CLAUDE_BIN\n',
    );
  });

  test('a session started from the home folder or above it is refused unless --cwd names it', async () => {
    await runCliHere(['agent', 'settle', 'bot', 'turn'], { home });
    // The test runs in the repository: a HOME below it makes the repository an ancestor of home.
    const env = { PATH: '/nonexistent', HOME: join(process.cwd(), 'not-a-real-home') };
    const refused = await runCliHere(['drive', 'claude', '--as', 'bot'], { home, env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `sluice: invalid_params: refusing to drive from ${process.cwd()}: the model could read every file under it; run it from a project folder or pass --cwd DIR\n`,
    );
    const named = await runCliHere(['drive', 'claude', '--as', 'bot', '--cwd', process.cwd()], { home, env });
    expect(named.stderr).toMatch(/claude is not on PATH/);
  });

  test('an agent another driver holds is refused in one conflict line naming it, and nothing changes', async () => {
    await runCliHere(['agent', 'settle', 'bot', 'turn'], { home });
    const ctx = await openHost({ home });
    try {
      const bot = await resolvePrincipal(ctx, 'bot');
      // This test process holds the agent, as a running `sluice drive` would.
      await claimDriver(ctx, bot, { client: 'codex', pid: process.pid, supervised: false });
      const before = await snapshotStore(ctx);
      const refused = await runCli(['drive', 'claude', '--as', 'bot', '--cwd', home], {
        home,
        env: { SLUICE_CLAUDE_BIN: '/bin/true' },
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `sluice: conflict: agent bot is already driven by sluice drive codex (pid ${process.pid} on ${hostname()}, home ${home}); stop that driver first\n`,
      );
      expect(refused.stdout).toBe('');
      expect(await snapshotStore(ctx)).toEqual(before);
      expect(existsSync(join(home, 'drivers', 'bot'))).toBe(false);
    } finally {
      await ctx.store.close();
    }
  });

  test('bad options and principals get one line each', async () => {
    await runCliHere(['agent', 'settle', 'bot', 'turn'], { home });
    const cases: [string[], number, RegExp][] = [
      [
        ['drive', 'codex', '--as', 'bot', '--sandbox', 'none'],
        1,
        /--sandbox must be workspace-write or danger-full-access/,
      ],
      [['drive', 'claude', '--as', 'bot', '--max-messages', '0'], 1, /--max-messages must be from 1 to 1000/],
      [['drive', 'claude', '--as', 'owner'], 1, /owner is a person/],
      [['drive', 'claude', '--as', 'ghost'], 2, /no principal named "ghost"/],
      [['agent', 'settle', 'bot', 'sometimes'], 1, /mode must be turn or explicit/],
    ];
    for (const [args, code, message] of cases) {
      const r = await runCliHere(args, { home, env: { PATH: '/nonexistent' } });
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});
