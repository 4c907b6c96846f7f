import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Pages the host's own connection lets the WAL reach before it checkpoints by itself (a backstop). */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;
/** What the WAL file is cut back to when it starts over, in bytes (16 MiB). */
export const WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;
/** How often the background checkpointer copies the WAL back into the database file. */
export const CHECKPOINT_INTERVAL_MS = 200;

/**
 * The worker's program: its own connection to the database file, a PASSIVE checkpoint whenever it
 * is poked (at most every interval). PASSIVE never waits for a lock and never blocks a writer or a
 * reader: what a reader still needs stays in the WAL until the next round.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
db.pragma('synchronous = ' + workerData.synchronous);
let due = false;
let timer = null;
const run = () => {
  timer = null;
  if (!due) return;
  due = false;
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
};
parentPort.on('message', (m) => {
  if (m === 'close') { if (timer) clearTimeout(timer); db.close(); parentPort.close(); return; }
  due = true;
  if (timer === null) timer = setTimeout(run, workerData.intervalMs);
});
`;

/** Commits a connection makes before it hands its checkpoints to a worker (a CLI command makes a few). */
export const COMMITS_BEFORE_BACKGROUND = 64;

/** Tells the checkpointer the WAL grew; stops it. */
export interface Checkpointer {
  /** A write committed: checkpoint within the interval. Cheap (one message, coalesced). */
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
export function startCheckpointer(options: { path: string; synchronous: 'NORMAL' | 'FULL' }): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      driver,
      path: options.path,
      synchronous: options.synchronous,
      intervalMs: CHECKPOINT_INTERVAL_MS,
    },
  });
  // Never what keeps the process alive; a worker that fails leaves the backstop in charge.
  worker.unref();
  let alive = true;
  const exited = new Promise<void>((resolve) => {
    worker.once('exit', () => {
      alive = false;
      resolve();
    });
    worker.once('error', () => {
      alive = false;
    });
  });
  let poked = false;
  return {
    poke() {
      // One message per event-loop turn at most: a burst of commits is one poke.
      if (!alive || poked) return;
      poked = true;
      setImmediate(() => {
        poked = false;
        if (alive) worker.postMessage('checkpoint');
      }).unref();
    },
    async close() {
      if (alive) worker.postMessage('close');
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
