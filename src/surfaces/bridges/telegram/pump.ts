/** A follower of the bridge that runs passes one at a time (docs/telegram.md, "Never blocked"). */
export interface Pump {
  /** Runs a pass now, or one more after the running pass when one is under way. */
  poke(): void;
  /** No pass starts after this; resolves when the running one has finished. */
  stop(): Promise<void>;
  /** Whether `stop` was called: a long pass checks it between Telegram calls. */
  readonly stopped: boolean;
}

/**
 * The loop the bridge's followers share (replies, reactions, approval cards): one pass at a time,
 * and one more after it when poked meanwhile, so no commit is missed and none runs twice at once.
 * A failed pass ends the loop at `onError`; the caller pokes again after its own backoff, so a wake
 * in the meantime does not retry early.
 */
export function startPump(
  pass: () => Promise<void>,
  options: { onError(err: unknown): void; onCaughtUp(): void },
): Pump {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const poke = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await pass();
        } catch (err) {
          options.onError(err);
          return;
        }
        options.onCaughtUp();
      } while (again && !stopped);
    })().finally(() => {
      running = undefined;
    });
  };
  return {
    poke,
    get stopped() {
      return stopped;
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
}
