import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { resolveHome } from '../../host/identity/index.js';

/** `<home>/logs/errors.log`: one JSON line per internal error, readable by the owner only. */
export function errorLogPath(home: string): string {
  return join(home, 'logs', 'errors.log');
}

/** The home this process works in, once a command has chosen it (`--home`, an agent lock's home). */
let homeInUse: string | undefined;

/**
 * Makes `home` where this process logs internal errors from now on, including a crash after the
 * command (an uncaught error in `serve`): the home in use, not `~/.sluice`.
 */
export function logErrorsInHome(home: string | undefined): void {
  if (home !== undefined) homeInUse = home;
}

/**
 * Records a bug (an error that is not a SluiceError) with its stack in the home's error log and
 * returns the one line a user sees: an error id to quote and where the details are. A user never
 * sees a stack trace; the log keeps it for whoever fixes the bug.
 */
export function recordInternalError(err: unknown, home = homeInUse): string {
  const id = `E${randomBytes(4).toString('hex')}`;
  const detail = {
    time: new Date().toISOString(),
    id,
    argv: process.argv.slice(2, 4),
    name: err instanceof Error ? err.name : typeof err,
    message: err instanceof Error ? err.message : String(err),
    code: (err as { code?: unknown } | null)?.code,
    stack: err instanceof Error ? err.stack : undefined,
  };
  try {
    // Inside the try: a home that cannot be resolved (an empty SLUICE_HOME) still gets the line.
    const path = errorLogPath(resolveHome(home));
    mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
    appendFileSync(path, `${JSON.stringify(detail)}\n`, { mode: 0o600 });
    return `sluice: internal error ${id} (a bug; details in ${path})`;
  } catch {
    return `sluice: internal error ${id}: ${detail.message.replace(/[\r\n]+/g, ' ').slice(0, 300)}`;
  }
}
