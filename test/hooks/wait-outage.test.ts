// A field report: `sluice wait --for claude --hook` (the wake of an idle Claude Code session)
// exited during a PostgreSQL outage of 35 s with "unavailable: cannot reach PostgreSQL", and a
// message sent after the server came back woke nothing. An outside fault now ends no wait: it
// reads again, backing off, and wakes the session once the store answers. Anything else still
// ends the wait with its error.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { WaitSource } from '../../src/surfaces/hooks/wait-sources.js';

const sources: WaitSource[] = [];
vi.mock('../../src/surfaces/hooks/wait-sources.js', () => ({
  openWaitSource: async () => {
    const next = sources.shift();
    if (next === undefined) throw new Error('no source staged');
    return next;
  },
}));

const { waitForMail } = await import('../../src/surfaces/hooks/wait-cli.js');

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
  afterEach(() => {
    sources.length = 0;
  });

  it('reads again after unavailable and wakes with the mail once the store answers', async () => {
    const source = stagedSource([down(), down(), down(), 'the delivery']);
    sources.push(source);
    await expect(waitForMail({ where, limits: {}, session: null })).resolves.toEqual({
      kind: 'mail',
      text: 'the delivery',
    });
    expect(source.reads).toBe(4);
    expect(source.closed).toBe(true);
  });

  it('still ends at its timeout while the store stays down, quietly', async () => {
    const source = stagedSource([down()]);
    sources.push(source);
    await expect(waitForMail({ where, limits: {}, session: null, timeoutMs: 400 })).resolves.toEqual({
      kind: 'quiet',
      reason: 'timeout',
    });
    expect(source.reads).toBeGreaterThanOrEqual(1);
  });

  it('any other error still ends the wait with it', async () => {
    const source = stagedSource([new SluiceError('denied', 'this shell is locked to agent other')]);
    sources.push(source);
    await expect(waitForMail({ where, limits: {}, session: null })).rejects.toMatchObject({ code: 'denied' });
    expect(source.reads).toBe(1);
  });
});
