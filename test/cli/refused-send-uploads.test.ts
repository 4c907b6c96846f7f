// `message send --attach` uploads each file before the send; a send then refused (no such
// target, a body over the limit, a reply to a message that is not there) kept its uploads as
// attachable rows of the sender's. Now a refusal forgets them: their rows go (the bytes, referenced
// by nothing, are `media gc`'s).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { useInProcessCliHome } from './in-process-home.js';

describe('a refused send keeps no upload', () => {
  const home = useInProcessCliHome();
  const mediaRows = async () => (await home.ctx.store.db.selectFrom('media').select('id').execute()).length;

  for (const [why, args] of [
    ['no such principal', ['message', 'send', 'nobody', '-m', 'hi']],
    ['no such channel', ['message', 'send', '#nope', '-m', 'hi']],
    ['a reply to no message', ['message', 'reply', 'M_nope', '-m', 'hi']],
    [
      'an idempotency key that is not one',
      ['message', 'send', 'owner', '-m', 'hi', '--idempotency-key', '\u0001'],
    ],
  ] as const) {
    it(`${why}: refused, and the upload is gone`, async () => {
      const file = join(home.ctx.home, `note-${why.length}.txt`);
      writeFileSync(file, `attached for ${why}`);
      const before = await mediaRows();
      const run = await runCliHere([...args, '--attach', file], { home: home.ctx.home });
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(/^sluice: [a-z_]+: [^\n]*\n$/);
      expect(await mediaRows()).toBe(before);
    });
  }
});
