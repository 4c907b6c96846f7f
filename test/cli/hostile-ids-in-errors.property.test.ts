import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { quoteInput } from '../../src/core/text.js';
import { addPrincipal } from '../../src/host/identity/principals.js';
import { hostileString } from '../core/arbitraries.js';
import { runCliHere } from '../support/cli-in-process.js';
import { useInProcessCliHome } from './in-process-home.js';

// An id a command is given comes back in its error line (`no message X`). It used to come back
// raw: an id with a newline forged a second line, one with ESC reached the terminal. Every id
// echoed in an error is now quoted by one helper (quoteInput): one line, no invisible character.

/** Ids with what a terminal acts on: escapes, bidi overrides, line breaks of every convention. */
const hostileId = fc.oneof(
  hostileString(30),
  fc
    .array(fc.constantFrom('\u001b[2J', '\u001b]0;x\u0007', '\u202e', '\u009b', '\r', '\n', 'M', '"', '\\'), {
      minLength: 1,
      maxLength: 8,
    })
    .map((p) => p.join('')),
);

/** Any character a terminal acts on instead of showing, in an error line's text. */
const ACTS_ON_TERMINAL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

describe('ids echoed in error lines', () => {
  const home = useInProcessCliHome();
  beforeAll(async () => {
    await addPrincipal(home.ctx, { name: 'helper', kind: 'agent' });
  });

  const commands: ((id: string) => string[])[] = [
    (id) => ['message', 'read', id],
    (id) => ['message', 'ls', '--since', id, '--as', 'helper'],
    (id) => ['message', 'archive', id, '--as', 'helper'],
    (id) => ['queue', 'withdraw', 'helper', id],
    (id) => ['queue', 'resume', 'helper', id],
    (id) => ['approval', 'show', id],
  ];

  it('are one line with no control, bidi or line-separator character', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostileId.filter((id) => !id.startsWith('-') && !id.includes('\u0000')),
        fc.nat({ max: commands.length - 1 }),
        async (id, which) => {
          const args = (commands[which] as (id: string) => string[])(id);
          const run = await runCliHere(args, { home: home.ctx.home });
          expect(run.code).not.toBe(0);
          expect(run.stderr.endsWith('\n')).toBe(true);
          const line = run.stderr.slice(0, -1);
          expect(line).toMatch(/^sluice: [a-z_]+: /);
          expect(line).not.toMatch(ACTS_ON_TERMINAL);
        },
      ),
      { numRuns: 80 },
    );
  });
});

describe('quoteInput', () => {
  it('is a JSON string, cut with …, every invisible character escaped', () => {
    expect(quoteInput('M1')).toBe('"M1"');
    expect(quoteInput('a\nb\u001b\u202e\u0085')).toBe('"a\\nb\\u001b\\u202e\\u0085"');
    expect(quoteInput('x'.repeat(100), 10)).toBe(`"${'x'.repeat(10)}…"`);
    expect(quoteInput('😀😀', 3)).toBe('"😀…"');
    expect(quoteInput(undefined)).toBe('"undefined"');
  });

  it('always one line without an invisible character, for any input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), fc.nat({ max: 100 }), (text, max) => {
        const q = quoteInput(text, max);
        expect(q).not.toMatch(ACTS_ON_TERMINAL);
        expect(q.startsWith('"')).toBe(true);
      }),
    );
  });
});
