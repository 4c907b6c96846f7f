// The empty queue's one line is never false (issue 23 item 3): for any summary and source filter,
// "no messages yet" only when none was ever queued, "nothing waiting" only when nothing is
// pending, and pending cards the reader cannot see are said to be there, with their number.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { queueEmptyText } from '../../web/src/queue/empty-state.js';
import type { MessageSource } from '../../web/src/wire.js';

const count = fc.nat({ max: 50 });
const summaries = fc
  .record({ person: count, agent: count, unknown: count, settled: count, known: fc.boolean() })
  .map(({ person, agent, unknown, settled, known }) => {
    const total = person + agent + unknown;
    return { total, counts: { person, agent, unknown }, ...(known ? { totalQueued: total + settled } : {}) };
  });
const sources = fc.constantFrom<MessageSource | undefined>(undefined, 'person', 'agent', 'unknown');

describe('the empty queue line', () => {
  it('says only what the summary shows (property)', () => {
    fc.assert(
      fc.property(summaries, sources, (summary, source) => {
        const text = queueEmptyText('helper', summary, source);
        const pending = source === undefined ? summary.total : summary.counts[source];
        expect(text.includes('no messages yet')).toBe(summary.totalQueued === 0 && source === undefined);
        const neverHadAny = source === undefined && summary.totalQueued === 0;
        expect(/^Nothing/.test(text)).toBe(pending === 0 && !neverHadAny);
        if (pending > 0) expect(text).toMatch(new RegExp(`^${pending} waiting`));
        if (text.includes('has been taken')) expect((summary.totalQueued ?? 0) > 0).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('reads as the page shows it', () => {
    const none = { total: 0, counts: { person: 0, agent: 0, unknown: 0 } };
    expect(queueEmptyText('helper', { ...none, totalQueued: 0 }, undefined)).toBe(
      'helper has no messages yet.',
    );
    expect(queueEmptyText('helper', { ...none, totalQueued: 3 }, undefined)).toBe(
      'Nothing waiting: every message sent to helper has been taken.',
    );
    expect(queueEmptyText('helper', none, undefined)).toBe('Nothing is waiting for helper.');
    expect(
      queueEmptyText(
        'helper',
        { total: 2, counts: { person: 2, agent: 0, unknown: 0 }, totalQueued: 2 },
        'person',
      ),
    ).toBe('2 waiting from people in conversations you are not in: you see how many, not what they say.');
    expect(queueEmptyText('helper', { ...none, totalQueued: 2 }, 'agent')).toBe(
      'Nothing waiting from agents.',
    );
  });
});
