// Consent from the CLI (issue 25 item 3): a person named by another person is invited; they list,
// accept, decline and block from the command line, each answer one line (or one JSON array), and a
// refused command changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { snapshotStore } from '../support/store-snapshot.js';

describe('sluice channel invitations, accept, decline, block', () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
    await h.person('alice');
    await h.person('bob');
    await h.person('mallory');
    await h.agent('helper');
    await h.manage('helper', 'alice'); // only its managers add an agent to a group
  });
  afterAll(async () => h.close());
  const cli = (as: string, ...args: string[]) => runCliHere(['--as', as, ...args], { home: h.home });
  const ok = async (as: string, ...args: string[]) => {
    const r = await cli(as, ...args);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };

  it('invites, lists, accepts and declines', async () => {
    expect(await ok('alice', 'channel', 'create', 'ops', '--members', 'bob,helper')).toBe(
      '#ops\ninvited (they join when they accept): bob\n',
    );
    expect(await ok('alice', 'channel', 'create', 'side', '--members', 'bob')).toContain('invited');
    expect(await ok('bob', 'channel', 'ls')).toBe('no channels\n');
    const listed = JSON.parse(await ok('bob', 'channel', 'invitations', '--json'));
    expect(listed.map((i: { channel: { name: string } }) => i.channel.name)).toEqual(['ops', 'side']);
    expect(listed[0].invitedBy.name).toBe('alice');
    const table = (await ok('bob', 'channel', 'invitations')).split('\n');
    expect(table[0]).toMatch(/^CHANNEL\s+ID\s+INVITED BY\s+SINCE$/);
    expect(await ok('bob', 'channel', 'accept', '#ops')).toBe('joined #ops\n');
    expect(await ok('bob', 'channel', 'decline', listed[1].channel.id)).toBe('declined\n');
    expect(await ok('bob', 'channel', 'invitations')).toBe('no invitations\n');
    expect(
      JSON.parse(await ok('bob', 'channel', 'ls', '--json')).map((c: { name: string }) => c.name),
    ).toEqual(['#ops']);
  });

  it("refuses answering someone else's invitation in one line, and nothing changes", async () => {
    await ok('alice', 'channel', 'create', 'private', '--members', 'bob');
    const before = await snapshotStore(h.ctx);
    for (const verb of ['accept', 'decline']) {
      const r = await cli('mallory', 'channel', verb, '#private');
      expect(r.stderr).toBe('sluice: not_found: you have no invitation to #private\n');
      expect(r.code).toBe(2);
    }
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('blocks and unblocks an inviter; the inviter is not told', async () => {
    await ok('mallory', 'channel', 'create', 'spam-1', '--members', 'bob');
    await ok('mallory', 'channel', 'create', 'spam-2', '--members', 'bob');
    expect(await ok('bob', 'channel', 'block', 'mallory')).toBe(
      'blocked mallory (2 pending invitations dropped)\n',
    );
    expect(await ok('bob', 'channel', 'block', 'mallory')).toBe('blocked mallory\n');
    // The same answer as before the block.
    expect(await ok('mallory', 'channel', 'create', 'spam-3', '--members', 'bob')).toBe(
      '#spam-3\ninvited (they join when they accept): bob\n',
    );
    const invited = JSON.parse(await ok('bob', 'channel', 'invitations', '--json'));
    expect(invited.map((i: { channel: { name: string } }) => i.channel.name)).toEqual(['private']);
    expect(JSON.parse(await ok('bob', 'channel', 'blocked', '--json'))).toMatchObject([
      { name: 'mallory', kind: 'person' },
    ]);
    const refused = await cli('bob', 'channel', 'block', 'owner');
    expect(refused.stderr).toMatch(/^sluice: invalid_params: the owner adds people directly[^\n]*\n$/);
    expect(refused.code).toBe(1);
    expect(await ok('bob', 'channel', 'unblock', 'mallory')).toBe('unblocked mallory\n');
    expect(await ok('bob', 'channel', 'unblock', 'mallory')).toBe('mallory was not blocked\n');
    expect(await ok('bob', 'channel', 'blocked')).toBe('nobody blocked\n');
  });
});
