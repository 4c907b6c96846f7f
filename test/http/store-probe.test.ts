// /healthz in an outage: a ping to a database that does not answer used to hold the probe until
// the pool gave up (5 s and more; 30 s for a PostgreSQL host that accepts and never answers).
// The probe answers within its deadline, and probes during an outage share one ping.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { storeProbe } from '../../src/surfaces/http/store-probe.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the /healthz store probe', () => {
  it('a database that never answers: unavailable at the deadline, not later', async () => {
    vi.useFakeTimers();
    const probe = storeProbe(() => new Promise<void>(() => undefined), 1_000);
    const answered = probe().then(
      () => 'ok',
      (err: { code: string; message: string }) => `${err.code}: ${err.message}`,
    );
    await vi.advanceTimersByTimeAsync(999);
    let settled = false;
    void answered.then(() => {
      settled = true;
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await answered).toBe('unavailable: the database has not answered for 1.0 s');
  });

  it('probes during an outage share one ping and fail at once past the deadline', async () => {
    vi.useFakeTimers();
    const ping = vi.fn(() => new Promise<void>(() => undefined));
    const probe = storeProbe(ping, 1_000);
    const first = probe().catch((err: Error) => err.message);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await first).toMatch(/has not answered for 1\.0 s/);
    await vi.advanceTimersByTimeAsync(4_000);
    await expect(probe()).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringMatching(/5\.0 s/),
    });
    expect(ping).toHaveBeenCalledTimes(1);
  });

  it('once the database answers again, the next probe pings afresh and passes', async () => {
    let answer: (() => void) | undefined;
    const ping = vi.fn(
      () =>
        new Promise<void>((resolve) => {
          answer = resolve;
        }),
    );
    const probe = storeProbe(ping, 60_000);
    const first = probe();
    answer?.();
    await first;
    const second = probe();
    answer?.();
    await second;
    expect(ping).toHaveBeenCalledTimes(2);
  });

  it('a ping that fails fails the probe with its own error', async () => {
    const probe = storeProbe(() => Promise.reject(new Error('ECONNREFUSED')), 1_000);
    await expect(probe()).rejects.toThrow('ECONNREFUSED');
  });
});
