import { chmodSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';

/** A serve log past this size at start is moved to `serve.log.1` (one old file kept). */
export const SERVE_LOG_ROTATE_BYTES = 10 * 1024 * 1024;

/** `<home>/logs/serve.log`: `sluice serve`'s JSON request log unless `--log-format json`. */
export function serveLogPath(home: string): string {
  return join(home, 'logs', 'serve.log');
}

/**
 * Opens the serve log for appending, readable by the owner only (0600 in a 0700 folder: request
 * lines name peers and paths). Writes are synchronous so nothing is lost when the process exits.
 */
export function openServeLog(home: string, rotateBytes = SERVE_LOG_ROTATE_BYTES): pino.DestinationStream {
  const path = serveLogPath(home);
  mkdirSync(join(home, 'logs'), { recursive: true, mode: 0o700 });
  try {
    if (statSync(path).size > rotateBytes) renameSync(path, `${path}.1`);
  } catch {
    // No log yet.
  }
  const stream = pino.destination({ dest: path, sync: true, mode: 0o600, append: true });
  // The mode only applies when the file is created: tighten one left by an older version too.
  chmodSync(path, 0o600);
  return stream;
}
