import { describe, expect, it } from 'vitest';
import type { ChannelEvent } from '../../src/host/live/live.js';
import { CoalescingOutbox } from '../../src/host/live/live-outbox.js';

function fakeSink() {
  const sent: string[] = [];
  let buffered = 0;
  return {
    sent,
    setBuffered(n: number) {
      buffered = n;
    },
    sink: { bufferedAmount: () => buffered, send: (t: string) => sent.push(t) },
  };
}

const settle = (ms = 60) => new Promise((r) => setTimeout(r, ms));

function event(seq: number, channelId = 'c1'): ChannelEvent {
  return { kind: 'message.created', seq, channelId, messageId: `m${seq}` };
}

function outbox(sink: ReturnType<typeof fakeSink>['sink'], reads: { count: number }) {
  let revision = 0;
  return {
    bump: () => {
      revision += 1;
    },
    box: new CoalescingOutbox({
      sink,
      highWaterBytes: 100,
      pollMs: 5,
      maxHeldChannelEvents: 3,
      renderQueue: async (agentId) => {
        reads.count += 1;
        return `summary ${agentId} r${revision}`;
      },
      renderChannel: async (e) => `message ${e.messageId}`,
      renderResync: (channelId) => `resync ${channelId}`,
    }),
  };
}

describe('CoalescingOutbox', () => {
  it('sends channel events in order and one summary per agent once drained', async () => {
    const f = fakeSink();
    const reads = { count: 0 };
    const { box } = outbox(f.sink, reads);
    box.channelEvent(event(1));
    box.channelEvent(event(2));
    box.queueChanged('a');
    box.queueChanged('a');
    await settle();
    expect(f.sent).toEqual(['message m1', 'message m2', 'summary a r0']);
    expect(reads.count).toBe(1);
  });

  it('while backed up holds one re-read per agent and sends only the latest state when drained', async () => {
    const f = fakeSink();
    const reads = { count: 0 };
    const { box, bump } = outbox(f.sink, reads);
    f.setBuffered(1_000);
    for (let i = 0; i < 1_000; i++) {
      bump();
      box.queueChanged('a');
      box.queueChanged('b');
    }
    await settle();
    expect(f.sent).toEqual([]);
    expect(box.pendingSize()).toBe(2);
    f.setBuffered(0);
    await settle();
    expect(f.sent).toEqual(['summary a r1000', 'summary b r1000']);
    expect(reads.count).toBe(2);
  });

  it('collapses channel events past the bound into one resync per channel', async () => {
    const f = fakeSink();
    const { box } = outbox(f.sink, { count: 0 });
    f.setBuffered(1_000);
    for (let seq = 1; seq <= 10; seq++) box.channelEvent(event(seq, seq % 2 ? 'odd' : 'even'));
    expect(box.pendingSize()).toBeLessThanOrEqual(4);
    f.setBuffered(0);
    await settle();
    expect(f.sent.filter((t) => t.startsWith('resync')).sort()).toEqual(['resync even', 'resync odd']);
    expect(f.sent.every((t) => t.startsWith('resync') || t.startsWith('message'))).toBe(true);
  });

  it('releases everything on close and sends nothing after', async () => {
    const f = fakeSink();
    const { box } = outbox(f.sink, { count: 0 });
    f.setBuffered(1_000);
    box.queueChanged('a');
    box.channelEvent(event(1));
    box.close();
    expect(box.pendingSize()).toBe(0);
    f.setBuffered(0);
    box.queueChanged('a');
    await settle();
    expect(f.sent).toEqual([]);
  });
});
