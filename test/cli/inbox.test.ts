import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { runCli, tempHome } from '../support/host.js';

// The CLI in one temp home, run in this process; the built launcher (`npm test` builds first) where
// the process is the point: creating the home, a 1 MB body piped to its stdin, two exit codes.
describe('the inbox CLI', () => {
  const { home, cleanup } = tempHome();
  const cli = (args: string[], input?: string) =>
    runCliHere(args, { home, ...(input !== undefined ? { input } : {}) });
  const launcher = (args: string[], input?: string) =>
    runCli(args, { home, ...(input !== undefined ? { input } : {}) });
  const ok = async (args: string[], input?: string, run = cli) => {
    const r = await run(args, input);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };

  beforeAll(async () => {
    await ok(['init'], undefined, launcher);
    await ok(['agent', 'add', 'bot']);
    await ok(['person', 'add', 'alice']);
    await ok(['channel', 'create', 'general', '--members', 'bot,alice']);
  });
  afterAll(cleanup);

  it('init is idempotent', async () => {
    expect(await ok(['init'])).toContain('sluice home ready');
  });

  it('sends, lists complete bodies FIFO, replies, archives, and the archived message is gone', async () => {
    const big = `${'x'.repeat(1_000_000)}\nend`;
    const first = (await ok(['message', 'send', '#general', '-m', 'first'])).trim();
    const second = (
      await ok(['message', 'send', 'bot', '-m', '-', '--subject', 'big one'], big, launcher)
    ).trim();
    const third = (await ok(['message', 'send', '#general', '--as', 'alice', '-m', 'third'])).trim();
    expect(first).toMatch(/^[0-9A-Z]{26}$/);

    const rows = JSON.parse(
      await ok(['message', 'ls', '--as', 'bot', '--json', '--include-body', '--max-chars', '100000000']),
    ).messages;
    expect(rows.map((r: { id: string }) => r.id)).toEqual([first, second, third]);
    expect(rows[1].body).toBe(big);
    expect(rows[1]).toMatchObject({
      channel: 'dm:bot,owner',
      from: 'owner',
      sender: 'owner',
      subject: 'big one',
      state: 'waiting',
    });
    expect(rows[2]).toMatchObject({
      channel: '#general',
      from: 'alice',
      sender: 'person',
      replyTo: null,
      attachments: [],
    });

    const reply = (await ok(['message', 'reply', first, '--as', 'bot', '-m', 'got it'])).trim();
    const history = JSON.parse(await ok(['channel', 'history', '#general', '--json']));
    expect(history.at(-1)).toMatchObject({
      message_id: reply,
      body: 'got it',
      reply_to: { message_id: first },
    });

    const receipts = JSON.parse(await ok(['message', 'archive', first, '--as', 'bot', '--json']));
    expect(receipts).toEqual([{ id: first, archivedAt: expect.any(String), already: false }]);
    const again = JSON.parse(await ok(['message', 'archive', first, '--as', 'bot', '--json']));
    expect(again).toEqual([{ id: first, archivedAt: receipts[0].archivedAt, already: true }]);

    const after = JSON.parse(await ok(['message', 'ls', '--as', 'bot', '--json']));
    expect(after.map((r: { id: string }) => r.id)).toEqual([second, third]);
    const archived = JSON.parse(await ok(['message', 'ls', '--as', 'bot', '--json', '--archive']));
    expect(archived.map((r: { id: string }) => r.id)).toEqual([first]);
  });

  it('reads one message whole, as text and as JSON in the shape of message ls rows', async () => {
    const id = (await ok(['message', 'send', 'bot', '-m', 'line one\nline two 😀'])).trim();
    const text = await ok(['message', 'read', id, '--as', 'bot']);
    // The sender and what they are to the reader (provenance).
    expect(text).toContain('From: owner (owner)');
    expect(text.endsWith('line one\nline two 😀\n')).toBe(true);
    const read = JSON.parse(await ok(['message', 'read', id, '--as', 'bot', '--json']));
    expect(read).toMatchObject({
      id,
      body: 'line one\nline two 😀',
      from: 'owner',
      sender: 'owner',
      state: 'waiting',
      next: null,
    });
    const [row] = JSON.parse(await ok(['message', 'ls', '--as', 'bot', '--json'])).filter(
      (r: { id: string }) => r.id === id,
    );
    expect(Object.keys(read).slice(0, -2)).toEqual(Object.keys(row));
  });

  it('renders a read-only delivery envelope', async () => {
    const before = await ok(['queue', 'summary', 'bot']);
    const out = await ok(['delivery', '--as', 'bot', '--for', 'claude']);
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^\[sluice\] inbox for bot: /);
    expect(JSON.parse(lines[1] as string).schema).toBe('sluice.delivery.v1');
    expect(out.length).toBeLessThanOrEqual(10_001);
    expect(await ok(['queue', 'summary', 'bot'])).toBe(before);
    expect(await ok(['delivery', '--as', 'bot', '--metadata'])).toContain(
      'sluice message ls --json --include-body',
    );
  });

  const refusals: [string, string[], number, RegExp][] = [
    ['an unknown id', ['message', 'archive', 'NOPE', '--as', 'bot'], 2, /not_found/],
    ['an unknown flag', ['message', 'ls', '--bogus'], 1, /unknown option/],
    ['an unknown command', ['frobnicate'], 1, /unknown command/],
    [
      'a non-member sender',
      ['message', 'send', '#general', '--as', 'carol', '-m', 'hi'],
      2,
      /not_found|not_member/,
    ],
    ['an empty body', ['message', 'send', 'bot', '-m', ''], 1, /invalid_params: message body is empty/],
    ['a bad limit', ['message', 'ls', '--as', 'bot', '--limit', '-3'], 1, /invalid_params/],
    ['a person listing an inbox', ['message', 'ls'], 1, /people have no inbox/],
    ['another agent archiving', ['message', 'archive', 'X', '--as', 'alice'], 1, /invalid_params/],
    ['a bad principal name', ['agent', 'add', '../etc'], 1, /invalid_params: invalid name/],
    ['a bad durability', ['channel', 'ls', '--durability', 'fast'], 1, /invalid_params/],
  ];

  const throughTheLauncher = new Set(['an unknown id', 'an unknown command']);

  it.each(refusals)(
    'refuses %s with one clear line and changes nothing',
    async (what, args, code, pattern) => {
      const before = await ok(['queue', 'summary', 'bot']);
      const r = await (throughTheLauncher.has(what) ? launcher : cli)(args);
      expect(r.code).toBe(code);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(pattern);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(await ok(['queue', 'summary', 'bot'])).toBe(before);
    },
  );

  it('refuses to archive a message that is not in the caller inbox, changing nothing', async () => {
    await ok(['agent', 'add', 'other']);
    const id = (await ok(['message', 'send', 'bot', '-m', 'for bot only'])).trim();
    const r = await cli(['message', 'archive', id, '--as', 'other']);
    expect(r.code).toBe(2);
    const mixed = await cli(['message', 'archive', id, 'UNKNOWN', '--as', 'bot']);
    expect(mixed.code).toBe(2);
    const rows = JSON.parse(await ok(['message', 'ls', '--as', 'bot', '--json']));
    expect(rows.map((x: { id: string }) => x.id)).toContain(id);
  });
});
