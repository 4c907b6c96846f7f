// A field report: `sluice wait --for claude --hook` (the wake of an idle Claude Code session)
// exited during a PostgreSQL outage of 35 s with "unavailable: cannot reach PostgreSQL", and a
// message sent after the server came back woke nothing. An outside fault now ends no wait: it
// reads again, backing off, and wakes the session once the store answers. Anything else still
// ends the wait with its error.
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { waitForMail } from '../../src/surfaces/hooks/wait-cli.js';
import type { WaitSource } from '../../src/surfaces/hooks/wait-sources.js';

/** A source whose reads answer `outcomes` in turn (the last one from then on). */
function stagedSource(outcomes: (string | Error)[]): WaitSource & { reads: number; closed: boolean } {
  const source = {
    reads: 0,
    closed: false,
    async render() {
      const outcome = outcomes[Math.min(source.reads, outcomes.length - 1)] as string | Error;
      source.reads++;
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    watch: () => () => undefined,
    async close() {
      source.closed = true;
    },
  };
  return source;
}

const where = { home: '/nonexistent-home', db: 'postgres://127.0.0.1:1/x', agent: 'helper' };
const down = () => new SluiceError('unavailable', 'cannot reach PostgreSQL at 127.0.0.1:1/x (ECONNREFUSED)');

describe('sluice wait through an outage', () => {
  const staged = (source: WaitSource) => ({ openSource: async () => source });

  it('reads again after unavailable and wakes with the mail once the store answers', async () => {
    const source = stagedSource([down(), down(), down(), 'the delivery']);
    await expect(waitForMail({ where, limits: {}, session: null, ...staged(source) })).resolves.toEqual({
      kind: 'mail',
      text: 'the delivery',
    });
    expect(source.reads).toBe(4);
    expect(source.closed).toBe(true);
  });

  it('still ends at its timeout while the store stays down, quietly', async () => {
    const source = stagedSource([down()]);
    await expect(
      waitForMail({ where, limits: {}, session: null, timeoutMs: 400, ...staged(source) }),
    ).resolves.toEqual({
      kind: 'quiet',
      reason: 'timeout',
    });
    expect(source.reads).toBeGreaterThanOrEqual(1);
  });

  it('a raw driver fault (a reset socket) is an outside fault too', async () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const source = stagedSource([reset, 'the delivery']);
    await expect(waitForMail({ where, limits: {}, session: null, ...staged(source) })).resolves.toEqual({
      kind: 'mail',
      text: 'the delivery',
    });
  });

  it('any other error still ends the wait with it', async () => {
    const source = stagedSource([new SluiceError('denied', 'this shell is locked to agent other')]);
    await expect(waitForMail({ where, limits: {}, session: null, ...staged(source) })).rejects.toMatchObject({
      code: 'denied',
    });
    expect(source.reads).toBe(1);
  });
});
