import { chmodSync, closeSync, mkdirSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';

/** A serve log past this size at start is moved to `serve.log.1` (one old file kept). */
export const SERVE_LOG_ROTATE_BYTES = 10 * 1024 * 1024;

/** `<home>/logs/serve.log`: `sluice serve`'s JSON request log unless `--log-format json`. */
export function serveLogPath(home: string): string {
  return join(home, 'logs', 'serve.log');
}

/**
 * Where pino writes request lines. A line that cannot be written (a full disk, a closed pipe) is
 * dropped and counted, never thrown: logging must not end the host (`dropped` is shown by
 * `GET /healthz` as `logLinesDropped`).
 */
export interface RequestLog {
  write(line: string): void;
  /** Lines dropped since start because the write failed. */
  dropped(): number;
  close(): void;
}

/**
 * Opens the serve log for appending, readable by the owner only (0600 in a 0700 folder: request
 * lines name peers and paths). Writes are synchronous so nothing is lost when the process exits.
 */
export function openServeLog(home: string, rotateBytes = SERVE_LOG_ROTATE_BYTES): RequestLog {
  const path = serveLogPath(home);
  mkdirSync(join(home, 'logs'), { recursive: true, mode: 0o700 });
  try {
    if (statSync(path).size > rotateBytes) renameSync(path, `${path}.1`);
  } catch {
    // No log yet.
  }
  const fd = openSync(path, 'a', 0o600);
  // The mode only applies when the file is created: tighten one left by an older version too.
  chmodSync(path, 0o600);
  let dropped = 0;
  return {
    write(line) {
      const bytes = Buffer.from(line);
      try {
        for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done);
      } catch {
        dropped++;
      }
    },
    dropped: () => dropped,
    close: () => closeSync(fd),
  };
}

/**
 * Request lines to a stream (stdout for `--log-format json`): a failed write (a closed pipe) is
 * dropped and counted instead of becoming an uncaught error.
 */
export function streamRequestLog(stream: Writable): RequestLog {
  let dropped = 0;
  stream.on('error', () => {
    dropped++;
  });
  return {
    write(line) {
      try {
        stream.write(line);
      } catch {
        dropped++;
      }
    },
    dropped: () => dropped,
    close() {},
  };
}
