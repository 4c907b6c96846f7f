import { SluiceError } from '../../core/errors.js';

/** How long `/healthz` waits for the store before it answers 503. */
export const HEALTH_DEADLINE_MS = 1_000;

/**
 * The store check behind `/healthz`: answers within `deadlineMs` whatever the database does. A
 * monitor probes often, and in an outage a ping can hang until the pool's connection timeout
 * (30 s on PostgreSQL); so at most one ping is in flight, later probes wait on it, and a ping
 * older than the deadline makes every probe fail at once with how long the store has not answered.
 */
export function storeProbe(ping: () => Promise<void>, deadlineMs = HEALTH_DEADLINE_MS): () => Promise<void> {
  let inFlight: { started: number; done: Promise<void> } | undefined;
  return async () => {
    if (!inFlight) {
      const done: Promise<void> = ping().finally(() => {
        if (inFlight?.done === done) inFlight = undefined;
      });
      inFlight = { started: Date.now(), done };
    }
    const { started, done } = inFlight;
    const left = deadlineMs - (Date.now() - started);
    const silent = () =>
      new SluiceError(
        'unavailable',
        `the database has not answered for ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
    if (left <= 0) {
      done.catch(() => undefined);
      throw silent();
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        done,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(silent()), left);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
}
