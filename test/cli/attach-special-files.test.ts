// `sluice message send --attach` outside an agent lock read whatever it was given to the end:
// /dev/zero filled memory without bound, a FIFO with no writer hung the command. Every --attach,
// locked or not, reads only a regular file within the upload limit, and refuses anything else
// with one coded line, storing nothing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, type TestHost } from '../support/host.js';

describe('--attach without an agent lock', () => {
  let h: TestHost;
  let dir: string;
  beforeAll(async () => {
    h = await openTestHost();
    await h.agent('helper');
    dir = mkdtempSync(join(tmpdir(), 'sluice-attach-'));
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    writeFileSync(join(dir, 'notes.txt'), 'notes');
    // Sparse: the size is over the limit without the disk holding it.
    writeFileSync(join(dir, 'huge.bin'), '');
    truncateSync(join(dir, 'huge.bin'), h.ctx.limits.maxUploadBytes + 1);
  });
  afterAll(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const send = (file: string) =>
    runCliHere(['message', 'send', 'helper', '-m', 'see file', '--attach', file], { home: h.home });
  const stored = async () => ({
    messages: (await h.ctx.store.db.selectFrom('messages').select('id').execute()).length,
    media: (await h.ctx.store.db.selectFrom('media').select('id').execute()).length,
  });

  it.each([
    [
      'a character device',
      '/dev/zero',
      /^sluice: invalid_params: attachment \/dev\/zero is not a regular file\n$/,
    ],
    ['a FIFO', 'pipe', /^sluice: invalid_params: attachment .*pipe is not a regular file\n$/],
    ['a folder', '.', /^sluice: invalid_params: attachment .* is not a regular file\n$/],
    [
      'a file over the upload limit',
      'huge.bin',
      /^sluice: too_large: attachment .*huge\.bin is \d+ bytes; the limit is \d+\n$/,
    ],
  ])('%s: refused with one coded line, nothing stored', async (_, name, line) => {
    const before = await stored();
    const run = await send(name.startsWith('/') ? name : join(dir, name));
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(line);
    expect(await stored()).toEqual(before);
  });

  it('a regular file is still attached', async () => {
    const run = await send(join(dir, 'notes.txt'));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });
});
