import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Pages the host's own connection lets the WAL reach before it checkpoints by itself (a backstop):
 * below {@link WAL_SIZE_LIMIT_BYTES} with 4 KiB pages, so a WAL that starts over is never cut back.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 4_000;
/** What the WAL file is cut back to when it starts over, in bytes (16 MiB). */
export const WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;
/** How long the checkpointer lets commits gather before it copies the WAL into the database file. */
export const CHECKPOINT_INTERVAL_MS = 200;
/**
 * Commits after which the checkpointer runs without waiting out its interval. A host sending flat
 * out writes about 15 pages a send, 2,500 sends a second: waiting the whole interval let the WAL
 * reach the backstop first (10,000 pages then), so the commit that crossed it copied the WAL
 * itself (60–75 ms) and the next one cut the file back (10 ms), once every 450 sends.
 */
export const COMMITS_PER_ROUND = 64;

/**
 * The worker's program: its own connection to the database file and a loop that sleeps until a
 * commit marks the WAL dirty, lets more commits gather for one interval or until
 * {@link COMMITS_PER_ROUND} have come, then runs a PASSIVE checkpoint. PASSIVE never waits for a
 * lock and never blocks a writer or a reader: what a reader still needs stays in the WAL until the
 * next round. The flag and the commit count are shared memory, so marking them costs a commit two
 * atomic operations (a message per commit cost 6 % of a consume cycle).
 */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const flag = new Int32Array(workerData.flag);
const IDLE = 0, DIRTY = 1, CLOSING = 2;
let db;
try {
  db = new Database(workerData.path, { fileMustExist: true });
  db.pragma('busy_timeout = 0');
  db.pragma('synchronous = ' + workerData.synchronous);
} catch {
  return;
}
for (;;) {
  Atomics.wait(flag, 0, IDLE);
  if (Atomics.load(flag, 0) === CLOSING) break;
  if (Atomics.load(flag, 1) < workerData.commitsPerRound) Atomics.wait(flag, 0, DIRTY, workerData.intervalMs);
  if (Atomics.compareExchange(flag, 0, DIRTY, IDLE) !== DIRTY) break;
  Atomics.store(flag, 1, 0);
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
}
db.close();
`;

const IDLE = 0;
const DIRTY = 1;
const CLOSING = 2;

/** Commits a connection makes before it hands its checkpoints to a worker (a CLI command makes a few). */
export const COMMITS_BEFORE_BACKGROUND = 64;

/** Tells the checkpointer the WAL grew, and stops it. */
export interface Checkpointer {
  /** A write committed: checkpoint within the interval. One atomic compare-and-swap. */
  poke(): void;
  close(): Promise<void>;
}

/**
 * Checkpoints a WAL-mode SQLite database from a worker thread, so a commit never pays for copying
 * the WAL back into the database file (with `synchronous = NORMAL` that copy is also the only
 * fsync): SQLite's automatic checkpoint runs inside the commit that crosses its threshold, which
 * made one send in 50 take 10–20 ms. The host's connection keeps a high automatic threshold
 * ({@link BACKSTOP_AUTOCHECKPOINT_PAGES}) in case the worker falls behind or stops.
 */
export function startCheckpointer(options: {
  path: string;
  synchronous: 'NORMAL' | 'FULL';
  /** How long commits gather (default {@link CHECKPOINT_INTERVAL_MS}). */
  intervalMs?: number;
}): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  // [0]: IDLE, DIRTY or CLOSING; [1]: commits since the worker last took the flag.
  const flag = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(`(() => {${WORKER_SOURCE}})()`, {
    eval: true,
    workerData: {
      driver,
      path: options.path,
      synchronous: options.synchronous,
      intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
      commitsPerRound: COMMITS_PER_ROUND,
      flag: flag.buffer,
    },
  });
  // Never what keeps the process alive while it runs (close() holds on to it until it has ended);
  // a worker that fails leaves the backstop in charge.
  worker.unref();
  const exited = new Promise<void>((resolve) => {
    worker.once('exit', () => resolve());
    worker.once('error', () => undefined);
  });
  return {
    poke() {
      // The commit that finds the WAL clean wakes the worker, and so does the one that fills a
      // round; the rest find it already dirty.
      const commits = Atomics.add(flag, 1, 1) + 1;
      if (Atomics.compareExchange(flag, 0, IDLE, DIRTY) === IDLE || commits === COMMITS_PER_ROUND)
        Atomics.notify(flag, 0);
    },
    async close() {
      Atomics.store(flag, 0, CLOSING);
      Atomics.notify(flag, 0);
      // Unreferenced, the thread would not keep the process alive while it finishes: a process
      // with nothing else left to wait for would exit (code 13) before close() returned.
      worker.ref();
      await exited;
    },
  };
}

/**
 * A {@link Checkpointer} that starts only once the connection has committed
 * {@link COMMITS_BEFORE_BACKGROUND} times: a long-running host gets one within its first moments,
 * a CLI command or a hook (a few commits, then exit) never pays for a thread. Starting it raises
 * the connection's own automatic threshold to the backstop.
 */
export function lazyCheckpointer(options: {
  path: string;
  synchronous: 'NORMAL' | 'FULL';
  /** Sets the host connection's automatic checkpoint threshold, in pages. */
  setAutocheckpoint: (pages: number) => void;
}): Checkpointer {
  let commits = 0;
  let started: Checkpointer | undefined;
  let closed = false;
  return {
    poke() {
      if (started) return started.poke();
      if (closed || ++commits < COMMITS_BEFORE_BACKGROUND) return;
      started = startCheckpointer(options);
      options.setAutocheckpoint(BACKSTOP_AUTOCHECKPOINT_PAGES);
      started.poke();
    },
    async close() {
      closed = true;
      await started?.close();
    },
  };
}
