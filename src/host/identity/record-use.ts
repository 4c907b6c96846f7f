import { SluiceError } from '../../core/errors.js';
import { asStoreFault } from '../../core/store-faults.js';
import type { HostContext } from './context.js';

/**
 * Recording a credential's last use (a token's `last_used_at`, a session's `last_seen_at`) is
 * bookkeeping: when an outside fault (a full disk, a busy or lost database) stops that write, the
 * request it authenticates goes on. The failure is counted (`GET /healthz`, `lastUseNotRecorded`)
 * and the write is tried again once the next touch is due, not on every request meanwhile.
 */

/** What one host's store has seen: when each credential's touch failed (ms), and how many did. */
interface UseRecords {
  failedAt: Map<string, number>;
  notRecorded: number;
}

// Per store, not per process: several hosts in one process (tests, an embedder) count apart.
const byStore = new WeakMap<object, UseRecords>();

function recordsOf(ctx: Pick<HostContext, 'store'>): UseRecords {
  let records = byStore.get(ctx.store);
  if (records === undefined) {
    records = { failedAt: new Map(), notRecorded: 0 };
    byStore.set(ctx.store, records);
  }
  return records;
}

/** How many last-use updates an outside fault stopped on this host since it opened its store. */
export function lastUseNotRecorded(ctx: Pick<HostContext, 'store'>): number {
  return byStore.get(ctx.store)?.notRecorded ?? 0;
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
  ctx: Pick<HostContext, 'store'>,
  id: string,
  nowMs: number,
  intervalMs: number,
  touch: () => Promise<void>,
): Promise<void> {
  const records = recordsOf(ctx);
  const failed = records.failedAt.get(id);
  if (failed !== undefined && nowMs - failed < intervalMs) return;
  try {
    await touch();
    records.failedAt.delete(id);
  } catch (err) {
    if (!isOutsideFault(err)) throw err;
    records.notRecorded++;
    records.failedAt.set(id, nowMs);
  }
}
