import type { HostContext } from '../identity/context.js';

/**
 * Replies this process is still handing to a client, per agent: a turn settled here waits for
 * them (bounded), so a result written a moment before `turn end` is not missed by a race inside
 * one process. Another process's replies cannot be awaited: their receipts may commit after the
 * settlement, and then they count for nothing (the message stays pending, never the reverse).
 */
const inFlight = new WeakMap<HostContext, Map<string, Set<Promise<void>>>>();

/** Marks one reply to `agentId` as in flight; call the returned function once it is confirmed or lost. */
export function replyInFlight(ctx: HostContext, agentId: string): () => void {
  let byAgent = inFlight.get(ctx);
  if (!byAgent) {
    byAgent = new Map();
    inFlight.set(ctx, byAgent);
  }
  let replies = byAgent.get(agentId);
  if (!replies) {
    replies = new Set();
    byAgent.set(agentId, replies);
  }
  let finish!: () => void;
  const reply = new Promise<void>((resolve) => {
    finish = resolve;
  });
  replies.add(reply);
  const set = replies;
  return () => {
    finish();
    set.delete(reply);
  };
}

/** Resolves once every reply in flight to `agentId` was confirmed or lost, or after `timeoutMs`. */
export async function repliesSettled(ctx: HostContext, agentId: string, timeoutMs = 10_000): Promise<void> {
  const replies = inFlight.get(ctx)?.get(agentId);
  if (!replies || replies.size === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
    timer.unref();
  });
  try {
    await Promise.race([Promise.all([...replies]), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
