import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TokenBuckets } from '../../src/core/token-bucket.js';
import { DEFAULT_HTTP_LIMITS, parseHttpLimits } from '../../src/surfaces/http/limits.js';

describe('SLUICE_HTTP_LIMITS', () => {
  it('reads the new settings, and rateLimitOwner as 0 or 1', () => {
    expect(
      parseHttpLimits(
        'maxWebSocketsPerPrincipal=4,idleWebSocketMs=1000,sendBurst=5,sendsPerMinute=60,rateLimitOwner=1',
      ),
    ).toEqual({
      maxWebSocketsPerPrincipal: 4,
      idleWebSocketMs: 1000,
      sendBurst: 5,
      sendsPerMinute: 60,
      rateLimitOwner: 1,
    });
    expect(parseHttpLimits('rateLimitOwner=0')).toEqual({ rateLimitOwner: 0 });
  });

  it.each(['rateLimitOwner=2', 'sendBurst=0', 'maxUnauthenticatedPerAddress=-1', 'noSuchLimit=1'])(
    'refuses %s with one line',
    (text) => {
      expect(() => parseHttpLimits(text)).toThrow(/^SLUICE_HTTP_LIMITS: /);
    },
  );

  it('keeps the owner exempt and leaves room under the connection cap by default', () => {
    expect(DEFAULT_HTTP_LIMITS.rateLimitOwner).toBe(0);
    expect(DEFAULT_HTTP_LIMITS.maxWebSocketsPerPrincipal * 2).toBeLessThan(
      DEFAULT_HTTP_LIMITS.maxConnections,
    );
    expect(DEFAULT_HTTP_LIMITS.maxUnauthenticatedPerAddress).toBeLessThan(DEFAULT_HTTP_LIMITS.maxConnections);
  });
});

describe('token buckets', () => {
  it('never grant more than the burst plus what the rate refilled, and say how long to wait', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 600 }),
        fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 200 }),
        (burst, perMinute, gaps) => {
          const buckets = new TokenBuckets(burst, perMinute);
          let now = 0;
          let granted = 0;
          for (const gap of gaps) {
            now += gap;
            const wait = buckets.take('p', now);
            if (wait === 0) granted++;
            else expect(wait).toBeGreaterThan(0);
          }
          expect(granted).toBeLessThanOrEqual(burst + Math.floor((now * perMinute) / 60_000) + 1);
        },
      ),
    );
  });

  it('grants one again exactly after the wait it named', () => {
    const buckets = new TokenBuckets(2, 60);
    expect(buckets.take('p', 0)).toBe(0);
    expect(buckets.take('p', 0)).toBe(0);
    const wait = buckets.take('p', 0);
    expect(wait).toBe(1_000);
    expect(buckets.take('p', wait - 1)).toBeGreaterThan(0);
    expect(buckets.take('p', wait)).toBe(0);
    expect(buckets.take('other', 0)).toBe(0);
  });
});
