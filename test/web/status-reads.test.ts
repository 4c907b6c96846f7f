import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StatusReads } from '../../web/src/channels/status-reads.js';
import type { MessageStatus } from '../../web/src/wire.js';

/** A status reader over reads the test answers by hand, in any order. */
function harness() {
  const open: { id: string; askedAt: number; resolve: () => void }[] = [];
  let clock = 0;
  let maxInFlight = 0;
  /** For each message: when the newest request was made, and when the newest finished read began. */
  const lastRequest = new Map<string, number>();
  const lastAnswerStartedAt = new Map<string, number>();
  const reads = new StatusReads(
    (id) =>
      new Promise<MessageStatus>((resolve) => {
        const askedAt = ++clock;
        open.push({
          id,
          askedAt,
          resolve: () => resolve({ messageId: id, channelId: 'c', recipients: [], recipientCount: 0 }),
        });
        maxInFlight = Math.max(maxInFlight, open.length);
      }),
    () => {},
  );
  return {
    reads,
    open,
    request(id: string) {
      lastRequest.set(id, ++clock);
      reads.request(id);
    },
    async answer(index: number) {
      const [read] = open.splice(index % open.length, 1);
      if (!read) return;
      read.resolve();
      lastAnswerStartedAt.set(read.id, Math.max(lastAnswerStartedAt.get(read.id) ?? 0, read.askedAt));
      // Let the read's then/finally run (they refill the in-flight set).
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
    maxInFlight: () => maxInFlight,
    lastRequest,
    lastAnswerStartedAt,
  };
}

describe('the page reads message statuses (StatusReads)', () => {
  it('never has more than 3 reads in flight, and every request is followed by a read that began after it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.constantFrom('a', 'b', 'c', 'd', 'e'), fc.nat(20)), { maxLength: 60 }),
        async (steps) => {
          const h = harness();
          for (const step of steps) {
            if (typeof step === 'string') h.request(step);
            else if (h.open.length > 0) await h.answer(step);
          }
          while (h.open.length > 0) await h.answer(0);
          expect(h.maxInFlight()).toBeLessThanOrEqual(3);
          expect(h.reads.pending()).toBe(0);
          for (const [id, at] of h.lastRequest)
            expect(h.lastAnswerStartedAt.get(id) ?? 0).toBeGreaterThan(at);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a failed read is dropped quietly and the next request reads again; close stops everything', async () => {
    let calls = 0;
    const seen: string[] = [];
    const reads = new StatusReads(
      async (id) => {
        calls++;
        if (calls === 1) throw new Error('not_found');
        return { messageId: id, channelId: 'c', recipients: [], recipientCount: 0 };
      },
      (s) => seen.push(s.messageId),
    );
    reads.request('gone');
    await new Promise((r) => setTimeout(r, 0));
    reads.request('gone');
    await new Promise((r) => setTimeout(r, 0));
    expect(seen).toEqual(['gone']);
    reads.close();
    reads.request('later');
    await new Promise((r) => setTimeout(r, 0));
    expect(calls).toBe(2);
  });
});
