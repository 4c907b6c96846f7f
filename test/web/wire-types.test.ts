import { describe, expect, it } from 'vitest';
import type { ChannelPage } from '../../src/host/channels/channels.js';
import type { InvitationPage } from '../../src/host/channels/invitations.js';
import type { MemberPage } from '../../src/host/channels/member-pages.js';
import type { QueueCard, QueuePageResult, QueueReadResult } from '../../src/host/device/queue-pages.js';
import type { QueueSummary } from '../../src/host/queue/queue.js';
import type { HistoryMessage, HistoryPage, MessageReadResult } from '../../src/host/reads/history.js';
import type { ConnectInfo } from '../../src/surfaces/agents/connect.js';
import type { AgentStatusReply } from '../../src/surfaces/rpc/agent-runs.js';
import type { PrincipalListPage } from '../../src/surfaces/rpc/methods.js';
import type * as Wire from '../../web/src/wire.js';

// web/src/wire.ts restates the JSON-RPC shapes the page reads (it builds without the host's
// Node-typed modules). These assignments are checked by `npm run typecheck`: if a host result
// stops matching what the page expects, the build of this file fails instead of the page at run time.
type Assignable<From, To> = From extends To ? true : false;
const checks = {
  summary: true satisfies Assignable<QueueSummary, Wire.QueueSummary>,
  card: true satisfies Assignable<QueueCard, Wire.QueueRow>,
  page: true satisfies Assignable<QueuePageResult, Wire.QueuePageReply>,
  read: true satisfies Assignable<QueueReadResult, Wire.QueueReadReply>,
  timeline: true satisfies Assignable<HistoryMessage, Wire.TimelineMessage>,
  history: true satisfies Assignable<HistoryPage, Wire.HistoryPage>,
  messageRead: true satisfies Assignable<MessageReadResult, Wire.MessageReadReply>,
  channelList: true satisfies Assignable<ChannelPage, Wire.ChannelListPage>,
  principals: true satisfies Assignable<PrincipalListPage, Wire.PrincipalListPage>,
  members: true satisfies Assignable<MemberPage, Wire.ChannelMembersPage>,
  agentStatus: true satisfies Assignable<AgentStatusReply, Wire.AgentStatus>,
  connect: true satisfies Assignable<ConnectInfo, Wire.ConnectInfo>,
  invitations: true satisfies Assignable<InvitationPage, Wire.InvitationPage>,
};

describe('the web page wire types', () => {
  it('accept every host result shape they restate (checked at compile time)', () => {
    expect(Object.values(checks).every(Boolean)).toBe(true);
  });
});
