import { useCallback, useEffect, useState } from 'preact/hooks';
import { useOnReconnect } from '../hooks.js';
import type { RpcClient } from '../rpc.js';
import type { Approval } from '../wire.js';
import { countByAgent, nextExpiry, type Waiting } from './approval-settling.js';

/**
 * How many approval requests wait for a decision, per agent, among the agents this person may
 * decide for (docs/approvals.md): read with `approval.list` (every such agent; at most 200), kept
 * live by `approval.changed` on the channel list subscription, re-read after a reconnect or an
 * `approval.resync`. Anyone the host refuses (an agent's session) gets no counts.
 */
export function usePendingApprovalCounts(client: RpcClient): Map<string, number> {
  // Request id → its agent and timeout, for the pending ones.
  const [pending, setPending] = useState<ReadonlyMap<string, Waiting>>(new Map());
  // Bumped when a counted request runs out, so the count is taken again.
  const [now, setNow] = useState(() => Date.now());
  const load = useCallback(() => {
    client
      .call<{ approvals: Approval[] }>('approval.list', { status: 'pending' })
      .then((r) =>
        setPending(
          new Map(
            r.approvals
              .filter((a) => a.status === 'pending')
              .map((a) => [a.id, { agent: a.agent, expiresAt: a.expiresAt }]),
          ),
        ),
      )
      .catch(() => setPending(new Map()));
  }, [client]);
  useEffect(() => {
    // Subscribed before the first read (the host answers in order), so no request falls between.
    const dispose = client.subscribe({ channelList: true });
    const off = client.on('approval.changed', ({ approval }) => {
      setPending((current) => {
        const next = new Map(current);
        if (approval.status === 'pending')
          next.set(approval.id, { agent: approval.agent, expiresAt: approval.expiresAt });
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
  useEffect(() => {
    const at = nextExpiry(pending, now);
    if (at === null) return;
    // setTimeout holds at most 2^31-1 ms; a longer wait re-arms then.
    const timer = setTimeout(() => setNow(Date.now()), Math.min(at - Date.now() + 1, 2 ** 31 - 1));
    return () => clearTimeout(timer);
  }, [pending, now]);
  return countByAgent(pending, Math.max(now, Date.now()));
}
