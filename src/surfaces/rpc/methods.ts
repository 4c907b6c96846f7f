import { type Bounded, boundedJson } from '../../core/bounded.js';
import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import type { ChannelCreated, Hello, SentReply } from '../../core/wire/index.js';
import {
  acceptInvitation,
  addMember,
  blockInviter,
  channelActivityPageReply,
  channelMembersPage,
  createChannel,
  declineInvitation,
  getChannel,
  leaveChannel,
  listBlockedInviters,
  listChannelsPage,
  listInvitationsPage,
  markRead,
  removeMember,
  unblockInviter,
  unreadCountsOf,
} from '../../host/channels/index.js';
import { readQueueBody, readQueuePage } from '../../host/device/index.js';
import type { HostContext } from '../../host/identity/index.js';
import {
  addPrincipal,
  isHostOwner,
  type Principal,
  principalDirectoryPage,
  requireHostOwner,
  requireQueueAccess,
} from '../../host/identity/index.js';
import { editMessage, readMessageStatus, sendMessage } from '../../host/messages/index.js';
import {
  editQueuedMessage,
  pauseQueue,
  readPauserSummary,
  readQueueSummary,
  readQueueSummaryReply,
  resumeQueue,
  withdrawMessage,
} from '../../host/queue/index.js';
import { readChannelHistory, readMessageBody } from '../../host/reads/index.js';
import { agentConnect, agentControl, agentStatus } from './agent-runs.js';
import { approvalDecide, approvalList, approvalRuleRevoke, approvalRules } from './approvals.js';
import type { MethodName, ParamsOf } from './schemas.js';

/** The `principal.list` reply (host/identity/principal-directory.ts). */
export type { PrincipalListPage } from '../../host/identity/index.js';

/** Wire limits for device reads (DESIGN.md §3.3); each is a setting with the design's default. */
export interface RpcLimits {
  /** Complete reply envelope for pages and body parts, UTF-8 bytes. */
  replyBytes: number;
  /** Complete queue summary reply, UTF-8 bytes. */
  summaryBytes: number;
  /** Largest accepted frame or POST body. */
  maxFrameBytes: number;
  /** Largest request id echoed back (UTF-8 bytes of its JSON). */
  maxIdBytes: number;
  /**
   * A WebSocket with more than this many unsent bytes counts as backed up: no further replies
   * are produced for it (and its notifications are held) until it drains.
   */
  highWaterBytes: number;
  /** A WebSocket backed up for longer than this is closed (its client stopped reading), ms. */
  stalledSocketMs: number;
  /** A WebSocket holding more than this many unsent bytes is closed at once. */
  maxBufferedBytes: number;
}

export const DEFAULT_RPC_LIMITS: RpcLimits = {
  replyBytes: 512 * 1024,
  summaryBytes: 8 * 1024,
  maxFrameBytes: 4 * 1024 * 1024,
  maxIdBytes: 4096,
  highWaterBytes: 256 * 1024,
  stalledSocketMs: 60_000,
  maxBufferedBytes: 4 * 1024 * 1024,
};

export const PROTOCOL = 'sluice/1';
export const CAPABILITIES = [
  'sluice.queue-pages.v1',
  'sluice.body-parts.v1',
  'sluice.channel-history.v1',
  'sluice.live.v1',
  'sluice.media.v1',
  'sluice.agent-runs.v1',
  'sluice.approvals.v1',
] as const;

/** Live subscriptions of one connection (WebSocket only). */
export interface SubscriptionControl {
  subscribe(queues: readonly Principal[], channelIds: readonly string[]): void;
  unsubscribe(agentNames: readonly string[], channelIds: readonly string[]): void;
  /** Live changes to the caller's own channel list (joined, left, members, unread counts). */
  subscribeChannelList(): Promise<void>;
  unsubscribeChannelList(): void;
  /** The client was given these channels' rows (a `channel.list` page): later changes need none. */
  noteListed?(channelIds: readonly string[]): void;
  list(): { queues: string[]; channels: string[]; channelList: boolean };
}

/** Who is calling, over what, and within which limits. */
export interface RpcSession {
  ctx: HostContext;
  principal: Principal;
  limits: RpcLimits;
  subscriptions?: SubscriptionControl | undefined;
  /** The server's per-principal send rate: throws `rate_limited` (dispatch.ts calls it). */
  admitSend?: ((principal: Principal) => void) | undefined;
  /** The server's per-principal channel-creation rate: throws `rate_limited` (dispatch.ts calls it). */
  admitChannelCreate?: ((principal: Principal) => void) | undefined;
}

/**
 * A handler's result: a value to serialize, or a bounded read (core/bounded.ts) whose exact text was
 * already fitted to its budget and is sent as it is.
 */
export type HandlerResult = Bounded<unknown> | { value: unknown };

type Handler<M extends MethodName> = (
  session: RpcSession,
  params: ParamsOf<M>,
  budget: number,
) => Promise<HandlerResult>;

// `value<T>` checks a reply against its shape in core/wire, the one the page reads.
const value = <T>(v: T): HandlerResult => ({ value: v });

/** Bytes of `,"unread":100`, rounded up: what the unread count adds to a `channel.list` row. */
const UNREAD_FIELD_BYTES = 16;

/** The queue summary as this caller may see it (docs/security.md, "Who may do what"). */
export async function summaryFor(session: RpcSession, agentName: string) {
  const access = await requireQueueAccess(session.ctx, session.principal, agentName);
  return readQueueSummary(session.ctx, access);
}

export const HANDLERS: { [M in MethodName]: Handler<M> } = {
  'host.hello': async (s) =>
    value<Hello>({
      protocol: PROTOCOL,
      capabilities: [...CAPABILITIES],
      limits: {
        replyBytes: s.limits.replyBytes,
        summaryBytes: s.limits.summaryBytes,
        maxFrameBytes: s.limits.maxFrameBytes,
        maxIdBytes: s.limits.maxIdBytes,
        maxBodyBytes: s.ctx.limits.maxBodyBytes,
        maxUploadBytes: s.ctx.limits.maxUploadBytes,
        maxPageSize: 200,
        previewBytes: 512,
      },
      principal: { id: s.principal.id, name: s.principal.name, kind: s.principal.kind },
      // What the caller may start from a device, asked of the host rather than re-derived by it
      // (the same rule `principal.addAgent` enforces).
      canAddAgent: isHostOwner(s.principal),
    }),
  'queue.summary': async (s, p, budget) => {
    // The reply adds the agent's presence (from its turns); `queue.changed` pushes carry it too.
    const access = await requireQueueAccess(s.ctx, s.principal, p.agent);
    // With whether this reader may pause or resume the whole queue (the page's buttons).
    const reply = boundedJson(await readQueueSummaryReply(s.ctx, s.principal, access));
    if (utf8Length(reply.text) > Math.min(budget, s.limits.summaryBytes)) {
      throw new SluiceError('too_large', 'the queue summary does not fit its budget');
    }
    return reply;
  },
  'queue.page': async (s, p, budget) => readQueuePage(s.ctx, s.principal, p, budget),
  'queue.read': async (s, p, budget) => readQueueBody(s.ctx, s.principal, p, budget),
  'queue.pause': async (s, p) => {
    await pauseQueue(s.ctx, s.principal, p.agent, p.reason);
    return value({ summary: await readPauserSummary(s.ctx, s.principal, p.agent) });
  },
  'queue.resume': async (s, p) => {
    await resumeQueue(s.ctx, s.principal, p.agent, p.messageId);
    const summary =
      p.messageId === undefined
        ? await readPauserSummary(s.ctx, s.principal, p.agent)
        : await summaryFor(s, p.agent);
    return value({ summary });
  },
  'queue.withdraw': async (s, p) => {
    await withdrawMessage(s.ctx, s.principal, p.agent, p.messageId);
    return value({ summary: await summaryFor(s, p.agent) });
  },
  'queue.edit': async (s, p) => {
    const edited = await editQueuedMessage(s.ctx, s.principal, p.agent, p.messageId, p.body);
    return value({ messageId: edited.message_id, revision: edited.revision });
  },
  'principal.list': async (s, p) => value(await principalDirectoryPage(s.ctx, s.principal, p)),
  'principal.addAgent': async (s, p) => {
    requireHostOwner(s.principal, 'add an agent');
    const a = await addPrincipal(s.ctx, {
      name: p.name,
      kind: 'agent',
      settlement: p.settlement ?? 'explicit',
    });
    return value({ id: a.id, name: a.name, kind: a.kind, settlement: a.settlement });
  },
  'agent.status': async (s, p) => value(await agentStatus(s, p.agent)),
  'agent.start': async (s, p) => value(await agentControl(s, p.agent, 'start')),
  'agent.stop': async (s, p) => value(await agentControl(s, p.agent, 'stop')),
  'agent.restart': async (s, p) => value(await agentControl(s, p.agent, 'restart')),
  'agent.connect': async (s, p) => value(await agentConnect(s, p.agent)),
  'channel.list': async (s, p, budget) => {
    if (p.order === 'activity') {
      const { order: _order, ...params } = p;
      const { page, json } = await channelActivityPageReply(s.ctx, s.principal, params, { bytes: budget });
      s.subscriptions?.noteListed?.(page.channels.map((c) => c.id));
      return { text: json, value: page };
    }
    if (p.filter !== undefined || p.channelId !== undefined)
      throw new SluiceError('invalid_params', 'filter and channelId need order "activity"');
    // Room for `,"unread":N` on each row listed, added once the page is fitted.
    const page = await listChannelsPage(s.ctx, s.principal, p, {
      bytes: budget,
      rowExtraBytes: UNREAD_FIELD_BYTES,
    });
    const counts = await unreadCountsOf(
      s.ctx,
      s.principal,
      page.channels.map((c) => c.id),
    );
    s.subscriptions?.noteListed?.(page.channels.map((c) => c.id));
    return value({
      channels: page.channels.map((c) => ({ ...c, unread: counts.get(c.id) ?? 0 })),
      nextCursor: page.nextCursor,
    });
  },
  'channel.create': async (s, p) => {
    const c = await createChannel(s.ctx, s.principal, { name: p.name, members: p.members });
    return value<ChannelCreated>({
      id: c.id,
      name: c.name,
      kind: c.kind,
      joined: c.joined,
      invited: c.invited,
    });
  },
  'channel.addMember': async (s, p) => {
    // The channel comes from the committed change: `channelId` may be `#name`, which getChannel does not take.
    const { channel: c, joined, invited } = await addMember(s.ctx, s.principal, p.channelId, p.member);
    return value<ChannelCreated>({ id: c.id, name: c.name, kind: c.kind, joined, invited });
  },
  'channel.removeMember': async (s, p) => {
    await removeMember(s.ctx, s.principal, p.channelId, p.member);
    return value({ removed: true });
  },
  'channel.leave': async (s, p) => {
    const c = await leaveChannel(s.ctx, s.principal, p.channel_id);
    return value({ id: c.id, name: c.name, left: true });
  },
  'channel.invitations': async (s, p) => value(await listInvitationsPage(s.ctx, s.principal, p)),
  'channel.members': async (s, p, budget) => value(await channelMembersPage(s.ctx, s.principal, p, budget)),
  'channel.accept': async (s, p) => {
    const c = await acceptInvitation(s.ctx, s.principal, p.channel_id);
    return value({ id: c.id, name: c.name, kind: c.kind });
  },
  'channel.decline': async (s, p) => {
    await declineInvitation(s.ctx, s.principal, p.channel_id);
    return value({ declined: true });
  },
  'channel.block': async (s, p) => value(await blockInviter(s.ctx, s.principal, p.name)),
  'channel.unblock': async (s, p) => value(await unblockInviter(s.ctx, s.principal, p.name)),
  'channel.blocked': async (s) => value({ blocked: await listBlockedInviters(s.ctx, s.principal) }),
  'channel.history': async (s, p, budget) => readChannelHistory(s.ctx, s.principal, p, budget),
  'message.send': async (s, p) => {
    const sent = await sendMessage(s.ctx, s.principal, {
      to: p.to,
      body: p.body,
      subject: p.subject,
      replyTo: p.reply_to,
      attachmentIds: p.attachments,
      idempotencyKey: p.idempotency_key,
    });
    return value<SentReply>({ message_id: sent.message_id, channel_id: sent.channel_id });
  },
  'message.edit': async (s, p) => {
    const edited = await editMessage(s.ctx, s.principal, p.messageId, {
      body: p.body,
      ...(p.subject !== undefined ? { subject: p.subject } : {}),
    });
    return value({ messageId: edited.message_id, revision: edited.revision });
  },
  'message.read': async (s, p, budget) => readMessageBody(s.ctx, s.principal, p, budget),
  'message.markRead': async (s, p) => value(await markRead(s.ctx, s.principal, p.messageId)),
  'message.status': async (s, p) => value(await readMessageStatus(s.ctx, s.principal, p.message_id)),
  'approval.list': async (s, p) => value(await approvalList(s, p)),
  'approval.decide': async (s, p) => value(await approvalDecide(s, p)),
  'approval.rules': async (s, p) => value(await approvalRules(s, p)),
  'approval.rule.revoke': async (s, p) => value(await approvalRuleRevoke(s, p)),
  subscribe: async (s, p) => {
    const control = requireSubscriptions(s);
    const agents: Principal[] = [];
    for (const name of p.queues ?? [])
      agents.push((await requireQueueAccess(s.ctx, s.principal, name)).agent);
    for (const channelId of p.channels ?? []) await getChannel(s.ctx, s.principal, channelId);
    control.subscribe(agents, p.channels ?? []);
    if (p.channelList === true) await control.subscribeChannelList();
    return value({ subscribed: control.list() });
  },
  unsubscribe: async (s, p) => {
    const control = requireSubscriptions(s);
    control.unsubscribe(p.queues ?? [], p.channels ?? []);
    if (p.channelList === true) control.unsubscribeChannelList();
    return value({ subscribed: control.list() });
  },
};

function requireSubscriptions(s: RpcSession): SubscriptionControl {
  if (!s.subscriptions)
    throw new SluiceError('invalid_params', 'subscriptions need the WebSocket transport (GET /rpc)');
  return s.subscriptions;
}
