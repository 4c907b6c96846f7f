import { boundedJson } from '../../core/bounded.js';
import type { MessageOrigin, SenderRelation } from '../../core/provenance.js';
import { listActiveChannelIds } from '../../store/ops/channels.js';
import { readablePendingCounts } from '../../store/ops/inbox.js';
import { findQueue } from '../../store/ops/queues.js';
import { pendingMessagesAfter } from '../../store/ops/reads.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { loadProjections } from '../messages/messages.js';
import { relationsFor } from '../messages/provenance.js';
import { requireAgent } from '../queue/inbox.js';
import { openTurnOf } from '../turns/index.js';
import { fitsToolOutput } from './budgets.js';
import type { ReadOutcome } from './params.js';

/** `inbox_status`: counts from the maintained counters and the oldest pending message you can read. */
export interface InboxStatus {
  agent: string;
  settlement: 'explicit' | 'turn';
  pending: number;
  returned: number;
  oldest: {
    message_id: string;
    channel_id: string;
    from: string;
    /** What the sender is to this agent (core/provenance.ts). */
    sender: SenderRelation;
    /** The bridge it came through (`telegram`), only when it did. */
    via?: MessageOrigin;
    created_at: string;
  } | null;
  openTurn: boolean;
}

/**
 * A tiny summary for a model: the counters plus one index probe (and, for an agent that left a
 * channel, a walk of its pending entries). `pending` and `returned` count what it may read now:
 * entries of channels it left stay pending but hidden until it rejoins (I6), so they are not
 * counted (store/ops/inbox.ts readablePendingCounts); `oldest` is the oldest one it can read.
 */
export async function inboxStatus(ctx: HostContext, agent: Principal): Promise<ReadOutcome<InboxStatus>> {
  requireAgent(agent);
  const db = ctx.store.db;
  const queue = await findQueue(db, agent.id);
  const counts = queue ? await readablePendingCounts(db, queue) : { waiting: 0, returned: 0 };
  const channelIds = await listActiveChannelIds(db, agent.id);
  const [head] = await pendingMessagesAfter(db, agent.id, channelIds, 0, 1);
  let oldest: InboxStatus['oldest'] = null;
  if (head) {
    const [projection] = await loadProjections(db, [head.row]);
    const author = projection?.author ?? { id: head.row.author_id, name: 'unknown', kind: 'unknown' };
    oldest = {
      message_id: head.row.id,
      channel_id: head.row.channel_id,
      from: author.name,
      sender: (await relationsFor(ctx, agent))(author),
      ...(projection?.via === undefined ? {} : { via: projection.via }),
      created_at: head.row.created_at,
    };
  }
  const value: InboxStatus = {
    agent: agent.name,
    settlement: agent.settlement,
    pending: counts.waiting + counts.returned,
    returned: counts.returned,
    oldest,
    openTurn: (await openTurnOf(db, agent.id)) !== undefined,
  };
  const status = boundedJson(value);
  // Hostile ids could make the locator alone too large; the counts still fit.
  return fitsToolOutput(ctx, status.text) ? status : boundedJson({ ...value, oldest: null });
}
