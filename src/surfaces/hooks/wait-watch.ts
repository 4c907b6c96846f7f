// What wakes a waiting `sluice wait`: the kernel's file notifications, never a timer loop, so an
// idle waiter costs no CPU. A SQLite commit (from any process) writes the `-wal` file (or the main
// file when not in WAL mode); watching the folder survives the WAL being deleted and recreated.
// Readers touch only `-shm`, through shared memory, which is ignored.
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

/** Stops a watch. */
export type StopWatching = () => void;

/**
 * A rare re-check in case the file system delivers no notifications (some network mounts): it
 * bounds the delay of a missed change without costing anything measurable while idle.
 */
export const SAFETY_RECHECK_MS = 30_000;

/** Calls `onChange` after files named `name…` in `dir` change, plus every `safetyMs`. */
export function watchFolderFor(
  dir: string,
  accept: (filename: string) => boolean,
  onChange: () => void,
  safetyMs = SAFETY_RECHECK_MS,
): StopWatching {
  let watcher: FSWatcher | undefined;
  let fallback: NodeJS.Timeout | undefined;
  const poll = (ms: number) => {
    fallback = setInterval(onChange, ms);
  };
  try {
    watcher = watch(dir, { persistent: true }, (_event, filename) => {
      if (filename === null || accept(String(filename))) onChange();
    });
    // A watch that breaks (folder removed, inotify limits) falls back to a slow re-check.
    watcher.on('error', () => {
      watcher?.close();
      watcher = undefined;
      if (fallback !== undefined) clearInterval(fallback);
      poll(1_000);
    });
    poll(safetyMs);
  } catch {
    poll(1_000);
  }
  return () => {
    watcher?.close();
    if (fallback !== undefined) clearInterval(fallback);
  };
}

/** Calls `onChange` after any process commits to the SQLite database file at `path`. */
export function watchSqliteCommits(path: string, onChange: () => void): StopWatching {
  const base = basename(path);
  return watchFolderFor(dirname(path), (f) => f.startsWith(base) && !f.endsWith('-shm'), onChange);
}
