import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bodyVersion,
  boundedMessagePart,
  type ContinueCommands,
  fitsReadBudget,
} from '../../src/surfaces/cli/bounded-read.js';
import { hostileString } from '../core/arbitraries.js';

const commands: ContinueCommands = {
  listAfter: (id) => `sluice message ls --json --include-body --since ${id}`,
  listFrom: (id, offset, version) =>
    `sluice message ls --json --include-body --resume ${id} --offset ${offset} --body-sha ${version}`,
  readFrom: (id, offset, version) =>
    `sluice message read ${id} --json${offset > 0 ? ` --offset ${offset} --body-sha ${version}` : ''}`,
};

const row = (body: string) => ({
  id: 'M1',
  channel: '#general',
  from: 'alice',
  sender: 'person' as const,
  createdAt: '2026-11-30T00:00:00.000Z',
  subject: null,
  replyTo: null,
  state: 'waiting' as const,
  attachments: [],
  body,
});

describe('message read --json parts: the budgeted slice', () => {
  it('each part fits, is the longest that fits, and the parts rejoin the body', () => {
    fc.assert(
      fc.property(
        hostileString(30).map((s) => s.repeat(60)),
        fc.integer({ min: 700, max: 1_500 }),
        fc.option(fc.integer({ min: 700, max: 2_000 }), { nil: undefined }),
        (body, chars, bytes) => {
          const budget = bytes === undefined ? { chars } : { chars, bytes };
          let offset = 0;
          let joined = '';
          for (let step = 0; step < 10_000; step++) {
            const text = boundedMessagePart(row(body), offset, budget, commands);
            expect(fitsReadBudget(text, budget)).toBe(true);
            const parsed = JSON.parse(text) as { body: string; next: string | null };
            joined += parsed.body;
            const end = offset + parsed.body.length;
            if (parsed.next === null) break;
            // One more code point would not fit: rendered with the next cut, it is over budget.
            const cp = String.fromCodePoint(body.codePointAt(end) as number);
            const more = end + (cp.length === 2 && body.charCodeAt(end + 1) >= 0xdc00 ? 2 : 1);
            if (more < body.length) {
              const longer = { ...JSON.parse(text), body: body.slice(offset, more) };
              longer.next = commands.readFrom('M1', more, bodyVersion(body));
              expect(fitsReadBudget(`${JSON.stringify(longer)}\n`, budget)).toBe(false);
            }
            offset = end;
          }
          expect(joined).toBe(body);
        },
      ),
      { numRuns: 60 },
    );
  });
});
