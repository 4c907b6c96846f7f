import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { ChannelEvent } from '../../src/host/live/live.js';
import { CoalescingOutbox } from '../../src/host/live/live-outbox.js';

/**
 * A subscriber's notifications while the store is unavailable (PostgreSQL restarting): what could
 * not be read is read again after a pause, in order, instead of being dropped; a failure that is
 * not `unavailable` turns a channel event into a resync notice (the client re-reads history).
 */
function event(seq: number): ChannelEvent {
  return { kind: 'message.created', seq, channelId: 'c1', messageId: `m${seq}` };
}

function setup(failures: Map<string, unknown[]>) {
  const sent: string[] = [];
  const errors: unknown[] = [];
  let wake: () => void = () => undefined;
  const fail = (key: string) => {
    const next = failures.get(key)?.shift();
    if (next !== undefined) throw next;
  };
  const box = new CoalescingOutbox({
    sink: {
      bufferedAmount: () => 0,
      send: (text) => {
        sent.push(text);
        wake();
      },
    },
    renderQueue: async (agentId) => {
      fail(agentId);
      return `summary ${agentId}`;
    },
    renderChannel: async (e) => {
      fail(e.messageId);
      return `message ${e.messageId}`;
    },
    renderResync: (channelId) => `resync ${channelId}`,
    onError: (err) => errors.push(err),
  });
  /** Resolves once `n` notifications went out (or fails after 10 s). */
  const sentAtLeast = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${JSON.stringify(sent)}`)), 10_000);
      wake = () => {
        if (sent.length >= n) {
          clearTimeout(timer);
          resolve();
        }
      };
      wake();
    });
  return { box, sent, errors, sentAtLeast };
}

const unavailable = () => new SluiceError('unavailable', 'cannot reach PostgreSQL');

describe('CoalescingOutbox while the store is unavailable', () => {
  it('reads a channel event and a queue summary again after the store comes back, in order, nothing dropped', async () => {
    const { box, sent, errors, sentAtLeast } = setup(
      new Map([
        ['m2', [unavailable(), unavailable()]],
        ['a', [unavailable()]],
      ]),
    );
    box.channelEvent(event(1));
    box.channelEvent(event(2));
    box.channelEvent(event(3));
    box.queueChanged('a');
    await sentAtLeast(4);
    expect(sent).toEqual(['message m1', 'message m2', 'message m3', 'summary a']);
    expect(errors).toHaveLength(3);
    box.close();
  });

  it('a channel event that fails otherwise becomes a resync notice for its channel', async () => {
    const { box, sent, sentAtLeast } = setup(new Map([['m1', [new Error('a bug')]]]));
    box.channelEvent(event(1));
    box.channelEvent(event(2));
    await sentAtLeast(2);
    expect(sent).toEqual(['message m2', 'resync c1']);
    box.close();
  });
});
