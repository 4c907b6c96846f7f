// An agent's managers (docs/security.md, "Who may do what"): the person who adds an agent manages
// it; only the owner or a current manager changes managers; only the agent, the owner and its
// managers pause or resume its whole queue. A refusal is one line, exit 2, and changes nothing.
// The CLI runs in this process; the first refusal goes through the built launcher (its exit code).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, runCli, type TestHost } from '../support/host.js';
import { snapshotStore } from '../support/store-snapshot.js';

describe('sluice agent managers | manage | unmanage', { timeout: 180_000 }, () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
    for (const name of ['alice', 'bob', 'carol']) await h.person(name);
  });
  afterAll(async () => h.close());
  const cli = (...args: string[]) => runCliHere(args, { home: h.home });
  const managers = async (agent: string, as = 'owner') => {
    const run = await cli('--as', as, 'agent', 'managers', agent, '--json');
    expect(run.code, run.stderr).toBe(0);
    return (JSON.parse(run.stdout) as { name: string }[]).map((m) => m.name);
  };
  const refusedUnchanged = async (args: string[], code: number, pattern: RegExp, launcher = false) => {
    const before = await snapshotStore(h.ctx);
    const run = launcher ? await runCli(args, { home: h.home }) : await cli(...args);
    expect(run.code, args.join(' ')).toBe(code);
    expect(run.stderr).toMatch(pattern);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stdout).toBe('');
    expect(await snapshotStore(h.ctx)).toEqual(before);
  };

  it('the person who adds an agent manages it; the owner adding one makes no manager', async () => {
    expect((await cli('--as', 'alice', 'agent', 'add', 'bot')).stdout).toBe('bot\n');
    expect(await managers('bot')).toEqual(['alice']);
    expect((await cli('agent', 'add', 'plain')).code).toBe(0);
    expect(await managers('plain')).toEqual([]);
    expect((await cli('agent', 'managers', 'plain')).stdout).toMatch(/^no managers/);
  });

  it('only the owner or a current manager changes managers; anyone else is denied and nothing changes', async () => {
    await refusedUnchanged(
      ['--as', 'carol', 'agent', 'manage', 'bot', 'carol'],
      2,
      /^sluice: denied: /,
      true,
    );
    await refusedUnchanged(['--as', 'bot', 'agent', 'manage', 'bot', 'carol'], 2, /^sluice: denied: /);
    await refusedUnchanged(['--as', 'carol', 'agent', 'unmanage', 'bot', 'alice'], 2, /^sluice: denied: /);
    await refusedUnchanged(['--as', 'carol', 'agent', 'managers', 'bot'], 2, /^sluice: denied: /);
    await refusedUnchanged(['agent', 'manage', 'bot', 'plain'], 1, /^sluice: invalid_params: /);
    await refusedUnchanged(['agent', 'manage', 'bot', 'nobody'], 2, /^sluice: not_found: /);

    expect((await cli('--as', 'alice', 'agent', 'manage', 'bot', 'bob')).stdout).toBe(
      'bob now manages bot\n',
    );
    expect((await cli('agent', 'manage', 'bot', 'bob')).stdout).toBe('bob already manages bot\n');
    expect(await managers('bot', 'bob')).toEqual(['alice', 'bob']);

    // bob (a manager) removes alice; alice may then neither pause bot nor change its managers.
    expect((await cli('--as', 'bob', 'agent', 'unmanage', 'bot', 'alice')).stdout).toBe(
      'alice no longer manages bot\n',
    );
    await refusedUnchanged(['agent', 'unmanage', 'bot', 'alice'], 2, /^sluice: not_found: /);
    await refusedUnchanged(['--as', 'alice', 'queue', 'pause', 'bot'], 2, /^sluice: denied: /);
    await refusedUnchanged(['--as', 'alice', 'agent', 'manage', 'bot', 'alice'], 2, /^sluice: denied: /);
    expect((await cli('--as', 'bob', 'queue', 'pause', 'bot')).stdout).toBe('paused\n');
    expect((await cli('--as', 'owner', 'queue', 'resume', 'bot')).stdout).toBe('resumed\n');
    expect(await managers('bot')).toEqual(['bob']);
  });
});
