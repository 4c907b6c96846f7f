import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shellWord } from '../../src/core/shell-word.js';

/** What `sh` passes to a command for each of `words`, quoted by shellWord. */
function throughShell(words: readonly string[]): string[] {
  const script = `printf '%s\\0' ${words.map(shellWord).join(' ')}`;
  const run = spawnSync('sh', ['-c', script], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  return run.stdout.split('\0').slice(0, -1);
}

const SHELL_SPECIAL = [...'#~\'"\\$`!*?[]{}()<>|&;= \t\n%+,:@/.-_'];

describe('shellWord', () => {
  it.each([
    ['bot', 'bot'],
    ['01J9ZK.x:y', '01J9ZK.x:y'],
    ['/opt/node/bin/node', '/opt/node/bin/node'],
    ['', "''"],
    ['#general', "'#general'"],
    ['~/x', "'~/x'"],
    ["o'brien", "'o'\\''brien'"],
    ['a b', "'a b'"],
  ])('quotes %j as %s', (word, quoted) => {
    expect(shellWord(word)).toBe(quoted);
  });

  it('gives every word back unchanged through sh, whatever it holds', () => {
    const word = fc.oneof(
      fc.string({ unit: fc.constantFrom(...SHELL_SPECIAL, 'a', 'Z', '9'), maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 6 }),
    );
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 20 }), (words) => {
        expect(throughShell(words)).toEqual(words);
      }),
      { numRuns: 40 },
    );
  });
});
