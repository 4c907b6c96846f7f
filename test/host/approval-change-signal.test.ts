// The wake-up an approval wait sleeps on: an abort that came before the wait must end it at once,
// or a stopped driver lives on until the approval's timeout (its timer holds the process open).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ChangeSignal } from '../../src/host/approvals/requests.js';
import type { HostContext } from '../../src/host/identity/context.js';

/** A context with no store behind it: the signal only needs somewhere to subscribe. */
function bareContext(): Pick<HostContext, 'store' | 'localCommitListeners'> {
  const store = { watchChanges: () => () => {} } as unknown as HostContext['store'];
  return { store, localCommitListeners: new Set() };
}

describe('ChangeSignal.wait', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves at once on a signal aborted before the wait, leaving no timer behind', async () => {
    const wake = new ChangeSignal(bareContext());
    const stop = new AbortController();
    stop.abort();
    let settled = false;
    const waiting = wake.wait(600_000, stop.signal).then(() => {
      settled = true;
    });
    // No time passes: only queued microtasks run.
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    await waiting;
    wake.close();
  });

  it('resolves on an abort during the wait and clears its timer', async () => {
    const wake = new ChangeSignal(bareContext());
    const stop = new AbortController();
    let settled = false;
    const waiting = wake.wait(600_000, stop.signal).then(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    stop.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    await waiting;
    wake.close();
  });
});
