/**
 * Token buckets keyed by name (a principal id): each holds at most `burst` tokens and gains
 * `perMinute` a minute. Pure: the caller passes the time, so tests and property checks need no clock.
 */
export class TokenBuckets {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly burst: number,
    readonly perMinute: number,
  ) {}

  /**
   * Takes one token for `key` at `nowMs`: 0 when taken, else the milliseconds until one is
   * available (nothing is taken then).
   */
  take(key: string, nowMs: number): number {
    const msPerToken = 60_000 / this.perMinute;
    const bucket = this.#buckets.get(key) ?? { tokens: this.burst, at: nowMs };
    const elapsed = Math.max(0, nowMs - bucket.at);
    bucket.tokens = Math.min(this.burst, bucket.tokens + elapsed / msPerToken);
    bucket.at = nowMs;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      // One entry per principal that ever sent: bounded by the principals the host has.
      this.#buckets.set(key, bucket);
      return 0;
    }
    this.#buckets.set(key, bucket);
    return Math.max(1, Math.ceil((1 - bucket.tokens) * msPerToken));
  }
}
