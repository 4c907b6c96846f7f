import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { runCli, tempHome } from '../support/host.js';

// The model's shell path (DESIGN.md §8): one process replies to and archives, alone or in a batch.
// The CLI runs in this process; a batch piped to the built launcher's stdin and one refusal's
// exit code go through a real one.
describe('handling messages in one process', { timeout: 300_000 }, () => {
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
  const send = async (body: string) => (await ok(['message', 'send', 'bot', '-m', body])).trim();
  const pending = async () =>
    JSON.parse(await ok(['message', 'ls', '--as', 'bot', '--json'])).map((r: { id: string }) => r.id);
  const historyBodies = async () =>
    JSON.parse(await ok(['channel', 'history', 'bot', '--json', '--limit', '1000'])).map(
      (m: { body: string }) => m.body,
    );

  let keep = '';
  beforeAll(async () => {
    await ok(['init']);
    await ok(['agent', 'add', 'bot']);
    keep = await send('keep me');
  }, 120_000);
  afterAll(cleanup);

  it('reply --archive replies and archives in one command, and a repeat changes nothing', async () => {
    const id = await send('ping');
    const out = await ok(['message', 'reply', id, '--as', 'bot', '--archive', '-m', 'pong']);
    const [replyId, archivedLine] = out.trim().split('\n');
    expect(replyId).toMatch(/^[0-9A-Z]{26}$/);
    expect(archivedLine).toMatch(new RegExp(`^${id} archived `));
    expect(await pending()).not.toContain(id);

    const again = JSON.parse(
      await ok(['message', 'reply', id, '--as', 'bot', '--archive', '-m', 'pong', '--json']),
    );
    expect(again).toMatchObject({ id, reply: replyId, archived: true, already: true });
    expect((await historyBodies()).filter((b: string) => b === 'pong')).toHaveLength(1);
  });

  it('handle replies to and archives a batch from JSON lines and prints one receipt per item', async () => {
    const ids = [await send('a'), await send('b'), await send('c')];
    const input = [
      JSON.stringify({ id: ids[0], body: 'reply a', archive: true }),
      JSON.stringify({ id: ids[1], archive: true }),
      JSON.stringify({ id: ids[2], body: 'reply c', archive: false }),
      '',
    ].join('\n');
    const lines = (await ok(['message', 'handle', '--as', 'bot'], input, launcher)).trim().split('\n');
    const receipts = lines.map((l) => JSON.parse(l));
    expect(receipts).toEqual([
      {
        id: ids[0],
        reply: expect.any(String),
        archived: true,
        archivedAt: expect.any(String),
        already: false,
      },
      { id: ids[1], reply: null, archived: true, archivedAt: expect.any(String), already: false },
      { id: ids[2], reply: expect.any(String), archived: false, archivedAt: null, already: false },
    ]);
    expect(await pending()).toEqual([keep, ids[2]]);

    const before = await historyBodies();
    const repeat = (await ok(['message', 'handle', '--as', 'bot'], input))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(repeat.map((r) => r.reply)).toEqual(receipts.map((r) => r.reply));
    expect(repeat.map((r) => r.archivedAt)).toEqual(receipts.map((r) => r.archivedAt));
    expect(repeat.slice(0, 2).every((r) => r.already)).toBe(true);
    expect(await historyBodies()).toEqual(before);
    await ok(['message', 'archive', ids[2] as string, '--as', 'bot']);
  });

  it.each([
    [
      'a line that is not JSON',
      (id: string) => `${JSON.stringify({ id, body: 'x' })}\nnot json\n`,
      /invalid_params: line 2/,
    ],
    [
      'an unknown field',
      (id: string) => `${JSON.stringify({ id, text: 'x' })}\n`,
      /invalid_params: line 1 has unknown field/,
    ],
    [
      'an empty body',
      (id: string) => `${JSON.stringify({ id, body: ' ' })}\n`,
      /invalid_params: line 1: body/,
    ],
    [
      'an item that does nothing',
      (id: string) => `${JSON.stringify({ id, archive: false })}\n`,
      /neither replies nor archives/,
    ],
    [
      'an id outside the inbox',
      (id: string) => `${JSON.stringify({ id, body: 'ok' })}\n${JSON.stringify({ id: 'NOPE', body: 'x' })}\n`,
      /not_found: no message "NOPE"/,
    ],
    ['empty input', () => '\n', /invalid_params: no items/],
  ])('handle refuses %s with one line and changes nothing', async (name, input, message) => {
    const id = keep;
    const before = await historyBodies();
    const run = name === 'a line that is not JSON' ? launcher : cli;
    const r = await run(['message', 'handle', '--as', 'bot'], input(id));
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(await historyBodies()).toEqual(before);
    expect(await pending()).toContain(id);
  });
});
