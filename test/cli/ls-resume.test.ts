import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openHost } from '../../src/host/identity/home.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/index.js';
import { bodyVersion } from '../../src/surfaces/cli/bounded-read.js';
import { runCliHere } from '../support/cli-in-process.js';
import { tempHome } from '../support/host.js';

// `message ls --resume ID --offset N`, what a page's `next` names when the page ended with the
// first part of a body: the rest of that body from N, then the messages after it.
describe('ls --resume continues a body split across pages', { timeout: 120_000 }, () => {
  const { home, cleanup } = tempHome();
  const run = (args: string[], input?: string) =>
    runCliHere(args, { home, env: { CODEX_THREAD_ID: '' }, ...(input !== undefined ? { input } : {}) });
  const ok = async (args: string[], input?: string) => {
    const r = await run(args, input);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };
  const ids: string[] = [];
  const bodies = ['語😀"x'.repeat(3_000), 'second', 'third'];
  const page = async (args: string[]) =>
    JSON.parse(await ok(['message', 'ls', '--json', '--include-body', ...args, '--as', 'bot']));

  beforeAll(async () => {
    await ok(['init']);
    await ok(['agent', 'add', 'bot']);
    for (const body of bodies) ids.push((await ok(['message', 'send', 'bot', '-m', '-'], body)).trim());
  }, 60_000);
  afterAll(cleanup);

  it('a page too small for the first body ends with its first part, and next resumes it where the part stops', async () => {
    const first = await page(['--max-bytes', '6000']);
    expect(first.messages).toHaveLength(1);
    const [cut] = first.messages;
    expect(cut).toMatchObject({ id: ids[0], part: { offset: 0, total: (bodies[0] as string).length } });
    const version = bodyVersion(bodies[0] as string);
    expect(first.next).toBe(
      `sluice message ls --json --include-body --resume ${ids[0]} --offset ${cut.body.length} --body-sha ${version} --max-bytes 6000 --as bot`,
    );
    const rest = await page([
      '--resume',
      ids[0] as string,
      '--offset',
      String(cut.body.length),
      '--body-sha',
      version,
    ]);
    expect(rest.messages.map((m: { id: string }) => m.id)).toEqual(ids);
    expect(rest.messages[0].part).toEqual({ offset: cut.body.length, total: (bodies[0] as string).length });
    expect(cut.body + rest.messages[0].body).toBe(bodies[0]);
    expect(rest.messages.slice(1).map((m: { body: string }) => m.body)).toEqual(bodies.slice(1));
    expect(rest.next).toBeNull();
  });

  it('refuses --offset without --resume, --resume with --since, without --json --include-body, or past the body, with one line', async () => {
    const lsJson = ['message', 'ls', '--json', '--include-body'];
    const resume = (id: string, offset: string, ...more: string[]) => [
      ...lsJson,
      '--resume',
      id,
      '--offset',
      offset,
      ...more,
    ];
    const second = ids[1] as string;
    const cases: [string[], RegExp][] = [
      [[...lsJson, '--offset', '3'], /--resume and --offset go together/],
      [[...lsJson, '--resume', ids[0] as string], /--resume and --offset go together/],
      [
        ['message', 'ls', '--json', '--resume', ids[0] as string, '--offset', '3'],
        /--resume needs --json --include-body/,
      ],
      [resume(second, '1', '--since', ids[0] as string), /--resume and --since exclude each other/],
      [resume(second, '7', '--body-sha', bodyVersion('second')), /--offset must be from 0 to 6/],
      [resume(second, '-1'), /--offset must be a whole number/],
      [resume(second, '3'), /--offset past 0 needs --body-sha/],
      [resume(second, '3', '--body-sha', 'XYZ; rm -rf /'), /--body-sha must be the 16 hex digits/],
      [[...lsJson, '--body-sha', bodyVersion('second')], /--body-sha goes with --resume/],
      [['message', 'read', second, '--json', '--offset', '3'], /--offset past 0 needs --body-sha/],
      [
        ['message', 'read', second, '--json', '--body-sha', bodyVersion('second')],
        /--body-sha goes with --offset/,
      ],
    ];
    for (const [args, error] of cases) {
      const r = await run([...args, '--as', 'bot']);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(error);
    }
    const unknown = await run([
      'message',
      'ls',
      '--json',
      '--include-body',
      '--resume',
      'nope',
      '--offset',
      '0',
      '--as',
      'bot',
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no message "nope" in your inbox/);
  });

  it('a body edited between two parts is not joined: next is refused with the command that starts it again, and nothing is handled', async () => {
    const long = '前半'.repeat(4_000);
    const [id] = [(await ok(['message', 'send', 'bot', '-m', '-'], long)).trim()];
    const first = await page(['--max-bytes', '6000', '--since', ids[2] as string]);
    const [cut] = first.messages;
    expect(cut).toMatchObject({ id, part: { offset: 0, total: long.length } });
    const readPart = JSON.parse(
      await ok(['message', 'read', id as string, '--json', '--max-bytes', '6000', '--as', 'bot']),
    );
    expect(readPart.next).toContain(`--body-sha ${bodyVersion(long)}`);
    const edited = '後半'.repeat(4_000);
    const ctx = await openHost({ home, durability: 'normal' });
    try {
      await editMessage(ctx, await resolvePrincipal(ctx, 'owner'), id as string, { body: edited });
    } finally {
      await ctx.store.close();
    }
    for (const next of [first.next as string, readPart.next as string]) {
      const args = next.split(' ').slice(1);
      const refused = await run(args);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(
        `message ${id} was edited after the part you have; read it again from its start:`,
      );
    }
    // Still waiting: a part of a version nobody has whole any more consumed nothing.
    const listed = JSON.parse(await ok(['message', 'ls', '--json', '--as', 'bot']));
    expect(listed.find((m: { id: string }) => m.id === id)).toMatchObject({ state: 'waiting' });
    // The command the refusal names starts the new body from its first part.
    const restart = (await run(first.next.split(' ').slice(1))).stderr
      .split('its start: ')[1]
      ?.trim() as string;
    expect(restart).toContain(`--resume ${id} --offset 0 --body-sha ${bodyVersion(edited)}`);
    const again = JSON.parse(await ok(restart.split(' ').slice(1)));
    expect(again.messages[0]).toMatchObject({ id, part: { offset: 0, total: edited.length } });
    expect(edited.startsWith(again.messages[0].body)).toBe(true);
    await ok(['message', 'archive', id as string, '--as', 'bot']);
  });

  it('a resumed message that left the inbox meanwhile: the page starts after it, with no part of it', async () => {
    await ok(['message', 'archive', ids[0] as string, '--as', 'bot']);
    const after = await page([
      '--resume',
      ids[0] as string,
      '--offset',
      '100',
      '--body-sha',
      '0123456789abcdef',
    ]);
    expect(after.messages.map((m: { id: string; body: string }) => [m.id, m.body])).toEqual([
      [ids[1], bodies[1]],
      [ids[2], bodies[2]],
    ]);
    expect(after.messages.every((m: { part?: unknown }) => m.part === undefined)).toBe(true);
  });
});
