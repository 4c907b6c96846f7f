import { useCallback, useEffect, useState } from 'preact/hooks';
import { useOnReconnect } from '../hooks.js';
import type { RpcClient } from '../rpc.js';
import type { Approval } from '../wire.js';

/** Pending request ids by agent name → how many each agent waits on. */
export function countByAgent(pending: ReadonlyMap<string, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const agent of pending.values()) counts.set(agent, (counts.get(agent) ?? 0) + 1);
  return counts;
}

/**
 * How many approval requests wait for a decision, per agent, among the agents this person may
 * decide for (docs/approvals.md): read with `approval.list` (every such agent; at most 200), kept
 * live by `approval.changed` on the channel list subscription, re-read after a reconnect or an
 * `approval.resync`. Anyone the host refuses (an agent's session) gets no counts.
 */
export function usePendingApprovalCounts(client: RpcClient): Map<string, number> {
  // Request id → agent name, for the pending ones.
  const [pending, setPending] = useState<ReadonlyMap<string, string>>(new Map());
  const load = useCallback(() => {
    client
      .call<{ approvals: Approval[] }>('approval.list', { status: 'pending' })
      .then((r) =>
        setPending(new Map(r.approvals.filter((a) => a.status === 'pending').map((a) => [a.id, a.agent]))),
      )
      .catch(() => setPending(new Map()));
  }, [client]);
  useEffect(() => {
    // Subscribed before the first read (the host answers in order), so no request falls between.
    const dispose = client.subscribe({ channelList: true });
    const off = client.on('approval.changed', ({ approval }) => {
      setPending((current) => {
        const next = new Map(current);
        if (approval.status === 'pending') next.set(approval.id, approval.agent);
        else next.delete(approval.id);
        return next;
      });
    });
    const offResync = client.on('approval.resync', load);
    load();
    return () => {
      off();
      offResync();
      dispose();
    };
  }, [client, load]);
  useOnReconnect(client, load);
  return countByAgent(pending);
}
