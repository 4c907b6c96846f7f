import { findMembershipTimes } from '../../store/ops/channel-activity.js';
import type { Db } from '../../store/store.js';
import { agentListing } from '../agents/agent-managers.js';
import { approvalForDecider } from '../approvals/decisions.js';
import { channelListRow } from '../channels/channel-list-live.js';
import { sidebarPlaces, unreadCounts } from '../channels/read-marks.js';
import { queueReaderIds } from '../identity/access.js';
import type { HostContext } from '../identity/context.js';
import { agentPresence } from '../identity/presence.js';
import { loadQueueSummary } from '../queue/queue.js';
import { currentMemberIds, presentForLive, presentReceipts } from './history.js';

/**
 * The reads a live connection makes for each change it pushes, bound to one host: the RPC
 * connection calls these and never holds the database handle (test/layering.test.ts).
 */
export function liveReadsFor(ctx: HostContext) {
  const db = ctx.store.db;
  const bind =
    <A extends unknown[], R>(read: (db: Db, ...args: A) => R) =>
    (...args: A): R =>
      read(db, ...args);
  return {
    channelListRow: bind(channelListRow),
    currentMemberIds: bind(currentMemberIds),
    unreadCounts: bind(unreadCounts),
    sidebarPlaces: bind(sidebarPlaces),
    membershipTimes: bind(findMembershipTimes),
    queueReaderIds: bind(queueReaderIds),
    agentListing: bind(agentListing),
    approvalForDecider: bind(approvalForDecider),
    queueSummaryFacts: bind(loadQueueSummary),
    agentPresence: bind(agentPresence),
    presentReceipts: bind(presentReceipts),
    presentForLive: bind(presentForLive),
  };
}

export type LiveReads = ReturnType<typeof liveReadsFor>;
