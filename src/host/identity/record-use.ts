import { SluiceError } from '../../core/errors.js';
import { asStoreFault } from '../../core/store-faults.js';

/**
 * Recording a credential's last use (a token's `last_used_at`, a session's `last_seen_at`) is
 * bookkeeping: when an outside fault (a full disk, a busy or lost database) stops that write, the
 * request it authenticates goes on. The failure is counted (`GET /healthz`, `lastUseNotRecorded`)
 * and the write is tried again once the next touch is due, not on every request meanwhile.
 */

/** When each credential's failed touch happened (ms), so it is retried only when due again. */
const failedAt = new Map<string, number>();
let notRecorded = 0;

/** How many last-use updates an outside fault stopped since this process started. */
export function lastUseNotRecorded(): number {
  return notRecorded;
}

function isOutsideFault(err: unknown): boolean {
  const fault = asStoreFault(err);
  return fault instanceof SluiceError && fault.code === 'unavailable';
}

/**
 * Runs `touch` (the last-use write of credential `id`) unless it failed less than `intervalMs`
 * ago; an outside fault is counted and swallowed, anything else (a bug) is thrown.
 */
export async function recordUse(
  id: string,
  nowMs: number,
  intervalMs: number,
  touch: () => Promise<void>,
): Promise<void> {
  const failed = failedAt.get(id);
  if (failed !== undefined && nowMs - failed < intervalMs) return;
  try {
    await touch();
    failedAt.delete(id);
  } catch (err) {
    if (!isOutsideFault(err)) throw err;
    notRecorded++;
    failedAt.set(id, nowMs);
  }
}
