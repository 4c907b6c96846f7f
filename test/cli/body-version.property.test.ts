// Property: a continuation goes on only in the body its part was cut from. For any two bodies
// (hostile content: lone surrogates, quotes, control and shell characters) and any offset past 0,
// `ls --resume` and `read --offset` go on exactly when the stored body is the one read, and an
// edited body is refused with one `conflict` naming the command that reads it from its start.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { bodyVersion } from '../../src/surfaces/cli/bounded-read.js';
import { partOffset, resumeOffset } from '../../src/surfaces/cli/message-listing.js';
import { hostileString } from '../core/arbitraries.js';
import { commands } from './bounded-read-fixtures.js';

const refusal = (fn: () => number): SluiceError | number => {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SluiceError) return err;
    throw err;
  }
};

describe('a part goes on only in the body it was cut from', () => {
  it('ls --resume and read --offset accept the body read and refuse any other with its restart command', () => {
    fc.assert(
      fc.property(
        hostileString(300).filter((s) => s.length > 0),
        fc.oneof(hostileString(300), fc.constant(null)),
        fc.nat(),
        (read, editedTo, at) => {
          const stored = editedTo ?? read;
          const offset = 1 + (at % read.length);
          const version = bodyVersion(read);
          const resumed = refusal(() =>
            resumeOffset({ id: 'M1', offset, version }, { message_id: 'M1', body: stored }, commands),
          );
          const partAt = refusal(() =>
            partOffset(
              { offset: String(offset), bodySha: version },
              { message_id: 'M1', body: stored },
              commands,
            ),
          );
          if (stored === read) {
            expect([resumed, partAt]).toEqual([offset, offset]);
            return;
          }
          for (const [err, restart] of [
            [resumed, commands.listFrom('M1', 0, bodyVersion(stored))],
            [partAt, commands.readFrom('M1', 0)],
          ] as const) {
            expect(err).toBeInstanceOf(SluiceError);
            expect((err as SluiceError).code).toBe('conflict');
            expect((err as SluiceError).message).toBe(
              `message M1 was edited after the part you have; read it again from its start: ${restart}`,
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
