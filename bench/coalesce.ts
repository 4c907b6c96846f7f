import { CoalescingOutbox } from '../src/host/live/live-outbox.js';
import type { BenchResult } from './result.js';

/**
 * A backed-up subscriber through N queue commits and N channel messages: what the server holds
 * for it (items and heap) must not grow with N. Measured side by side at 1,000 and 100,000.
 */
async function heldAfter(commits: number): Promise<{ items: number; heapBytes: number; sent: number }> {
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  let sent = 0;
  const outbox = new CoalescingOutbox({
    sink: { bufferedAmount: () => Number.MAX_SAFE_INTEGER, send: () => sent++ },
    renderQueue: async (agent) => `{"method":"queue.changed","params":{"agent":"${agent}"}}`,
    renderChannel: async (e) => JSON.stringify(e),
    renderResync: (channelId) => `{"method":"channel.resync","params":{"channelId":"${channelId}"}}`,
    pollMs: 60_000,
  });
  for (let i = 0; i < commits; i++) {
    outbox.queueChanged('agent-1');
    outbox.channelEvent({ kind: 'message.created', seq: i, channelId: 'c_1', messageId: `m${i}` });
  }
  await new Promise((r) => setTimeout(r, 5));
  globalThis.gc?.();
  const held = { items: outbox.pendingSize(), heapBytes: process.memoryUsage().heapUsed - heapBefore, sent };
  outbox.close();
  return held;
}

export async function benchCoalesce(): Promise<BenchResult[]> {
  const small = await heldAfter(1_000);
  const large = await heldAfter(100_000);
  const ratio = large.items / Math.max(1, small.items);
  const heapMiB = (b: number) => (Math.max(0, b) / 2 ** 20).toFixed(2);
  return [
    {
      name: 'coalescing: items held for a backed-up subscriber, 100,000 vs 1,000 commits',
      ratio,
      target: '<= 1',
      ok: ratio <= 1 && large.sent === 0,
      detail: `held ${large.items} vs ${small.items} items (one summary re-read + one resync notice); heap after ${heapMiB(large.heapBytes)} MiB vs ${heapMiB(small.heapBytes)} MiB; nothing sent while backed up`,
    },
  ];
}
