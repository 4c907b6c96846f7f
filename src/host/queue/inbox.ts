import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import { findChannelById, isActiveMember, listActiveChannelIds } from '../../store/ops/channels.js';
import { appendEvents } from '../../store/ops/events.js';
import {
  findInboxEntry,
  type InboxRow,
  listInboxEntries,
  readablePendingCounts,
  updateInboxStates,
} from '../../store/ops/inbox.js';
import { findMessageById, findMessagesBySeqs } from '../../store/ops/messages.js';
import { applyQueueDeltas, type CounterDelta, findQueue } from '../../store/ops/queues.js';
import { findReceipt, insertReceipt } from '../../store/ops/receipts.js';
import { type InboxState, isPendingState, PENDING_STATES } from '../../store/schema.js';
import type { Db } from '../../store/store.js';
import { announceCommit, type HostContext, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { resolvePrincipal } from '../identity/principals.js';
import { loadProjections } from '../messages/messages.js';
import type { MessageProjection } from '../messages/projection.js';

/** Waiting or returned (core/pending.ts). */
export function isPending(state: InboxState): boolean {
  return isPendingState(state);
}

/** Why an entry moved to `returned`: kept on the entry for its reader. */
export interface ReturnDetails {
  returned_reason?: string | null;
  failure_kind?: string | null;
}

/**
 * Moves one inbox entry to a new state, keeping the queue counters, revision and event log in
 * step. Every state change goes through here or {@link transitionEntries}, so counters never
 * drift from the rows.
 */
export async function transitionEntry(
  db: Db,
  entry: InboxRow,
  to: InboxState,
  at: string,
  extra: ReturnDetails = {},
): Promise<void> {
  await transitionEntries(db, [entry], to, at, extra);
}

/**
 * {@link transitionEntry} for several entries of one agent moving to the same state (a settled
 * turn): one update of the rows, one of the counters and one insert of their events, in entry
 * order, whatever the count. Entries already in `to` are skipped (except `returned`, which records
 * a new failure).
 */
export async function transitionEntries(
  db: Db,
  entries: readonly InboxRow[],
  to: InboxState,
  at: string,
  extra: ReturnDetails = {},
): Promise<void> {
  const moving = entries.filter((entry) => entry.state !== to || to === 'returned');
  const first = moving[0];
  if (first === undefined) return;
  if (moving.some((entry) => entry.agent_id !== first.agent_id)) {
    throw new Error('transitionEntries moves the entries of one agent at a time');
  }
  await updateInboxStates(
    db,
    first.agent_id,
    moving.map((entry) => entry.position),
    {
      state: to,
      updated_at: at,
      returned_reason: to === 'returned' ? (extra.returned_reason ?? null) : null,
      failure_kind: to === 'returned' ? (extra.failure_kind ?? null) : null,
    },
  );
  await applyQueueDeltas(
    db,
    first.agent_id,
    moving.map((entry) => counterDelta(entry.state, to, entry.source)),
  );
  await appendEvents(
    db,
    moving.map((entry) => ({
      kind: 'queue.changed' as const,
      agent_id: entry.agent_id,
      // With the channel, the event also tells the channel's live readers the message's receipts moved.
      channel_id: entry.channel_id,
      message_id: entry.message_id,
      created_at: at,
    })),
  );
}

/** How the queue counters move when one entry goes from `from` to `to`. */
function counterDelta(from: InboxState, to: InboxState, source: InboxRow['source']): CounterDelta {
  const delta: CounterDelta = { source };
  const wasPending = isPending(from);
  const nowPending = isPending(to);
  if (from === 'waiting') delta.waiting = -1;
  if (from === 'returned') delta.returned = -1;
  if (to === 'waiting') delta.waiting = (delta.waiting ?? 0) + 1;
  if (to === 'returned') delta.returned = (delta.returned ?? 0) + 1;
  if (wasPending !== nowPending) delta.pending = nowPending ? 1 : -1;
  return delta;
}

export interface InboxListing {
  entry: InboxRow;
  projection: MessageProjection;
  channelName: string;
}

export interface ListInboxOptions {
  /** List archived and handled entries instead of pending ones. */
  archive?: boolean;
  sinceId?: string | undefined;
  /** Start with this message (included when it is still listed), then the ones after it. */
  startId?: string | undefined;
  fromName?: string | undefined;
  limit?: number | undefined;
  /** Only these channels (a person reading the queue: the channels they share with the agent). */
  withinChannelIds?: readonly string[] | undefined;
}

/**
 * The agent's inbox, FIFO. Only channels the agent currently belongs to are listed (I6): an entry
 * from a channel it left stays pending but unreadable until it rejoins.
 */
export async function listInbox(
  ctx: HostContext,
  agent: Principal,
  options: ListInboxOptions = {},
): Promise<InboxListing[]> {
  requireAgent(agent);
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new SluiceError('invalid_params', '--limit must be an integer from 1 to 10000');
  }
  let afterPosition: number | undefined;
  const anchorId = options.sinceId ?? options.startId;
  if (anchorId !== undefined) {
    const anchor = await findMessageById(ctx.store.db, anchorId);
    const entry = anchor ? await findInboxEntry(ctx.store.db, agent.id, anchor.seq) : undefined;
    if (!entry) throw new SluiceError('not_found', `no message ${quoteInput(anchorId)} in your inbox`);
    // Positions are integers: one less than the anchor's lists the anchor itself first.
    afterPosition = options.sinceId !== undefined ? entry.position : entry.position - 1;
  }
  const authorId =
    options.fromName !== undefined ? (await resolvePrincipal(ctx, options.fromName)).id : undefined;
  const active = await listActiveChannelIds(ctx.store.db, agent.id);
  const within = options.withinChannelIds;
  const channelIds = within === undefined ? active : active.filter((id) => within.includes(id));
  const entries = await listInboxEntries(ctx.store.db, agent.id, {
    afterPosition,
    channelIds,
    authorId,
    states: options.archive ? ['archived', 'handled'] : PENDING_STATES,
    limit,
  });
  return withProjections(ctx.store.db, entries);
}

export async function withProjections(db: Db, entries: readonly InboxRow[]): Promise<InboxListing[]> {
  const rows = await findMessagesBySeqs(
    db,
    entries.map((e) => e.message_seq),
  );
  const projections = await loadProjections(db, rows);
  const channelNames = new Map<string, string>();
  for (const channelId of new Set(entries.map((e) => e.channel_id))) {
    const c = await findChannelById(db, channelId);
    channelNames.set(channelId, c?.name ?? channelId);
  }
  return entries.map((entry, i) => ({
    entry,
    projection: projections[i] as MessageProjection,
    channelName: displayChannel(channelNames.get(entry.channel_id) ?? entry.channel_id),
  }));
}

/** `#general` for groups, `dm:a,b` stays as is. */
export function displayChannel(name: string): string {
  return name.startsWith('dm:') ? name : `#${name}`;
}

export interface ArchiveReceipt {
  id: string;
  archivedAt: string;
  already: boolean;
}

/**
 * Archives exact ids for the agent: one receipt per id, idempotent. Unknown ids, ids outside the
 * agent's inbox and ids of a channel the agent has left fail the whole call and change nothing.
 */
export async function archiveMessages(
  ctx: HostContext,
  agent: Principal,
  messageIds: readonly string[],
): Promise<ArchiveReceipt[]> {
  requireAgent(agent);
  if (!Array.isArray(messageIds) || messageIds.length === 0) {
    throw new SluiceError('invalid_params', 'name at least one message id to archive');
  }
  if (messageIds.length > 1000) throw new SluiceError('invalid_params', 'at most 1000 ids per archive call');
  for (const id of messageIds) {
    if (typeof id !== 'string' || id.length === 0 || id.length > 4096) {
      throw new SluiceError('invalid_params', 'message ids must be non-empty strings');
    }
  }
  const at = nowIso(ctx);
  const receipts = await ctx.store.transaction(async (trx) => {
    const resolved: { id: string; entry: InboxRow }[] = [];
    for (const id of messageIds) {
      const message = await findMessageById(trx, id);
      const entry = message ? await findInboxEntry(trx, agent.id, message.seq) : undefined;
      if (!entry) throw new SluiceError('not_found', `no message ${quoteInput(id)} in ${agent.name}'s inbox`);
      // Entries of a channel the agent left stay pending but hidden until it rejoins (I3, I6).
      if (!(await isActiveMember(trx, entry.channel_id, agent.id)))
        throw new SluiceError(
          'not_member',
          `${agent.name} is no longer a member of the channel of message ${quoteInput(id)}`,
        );
      resolved.push({ id, entry });
    }
    const out: ArchiveReceipt[] = [];
    const seen = new Map<string, ArchiveReceipt>();
    for (const { id, entry } of resolved) {
      const prior = seen.get(id);
      if (prior) {
        out.push({ ...prior, already: true });
        continue;
      }
      const existing = await findReceipt(trx, agent.id, id);
      let receipt: ArchiveReceipt;
      if (existing) {
        receipt = { id, archivedAt: existing.archived_at, already: true };
      } else {
        await insertReceipt(trx, agent.id, id, at);
        if (isPending(entry.state) || entry.state === 'handled')
          await transitionEntry(trx, entry, 'archived', at);
        receipt = { id, archivedAt: at, already: false };
      }
      seen.set(id, receipt);
      out.push(receipt);
    }
    return out;
  });
  announceCommit(ctx);
  return receipts;
}

export function requireAgent(principal: Principal): void {
  if (principal.kind !== 'agent') {
    throw new SluiceError(
      'invalid_params',
      `${principal.name} is a person: people have no inbox (use --as AGENT)`,
    );
  }
}

/**
 * How many pending messages the agent may read now: entries of channels it left are not counted
 * (store/ops/inbox.ts {@link readablePendingCounts}); no row scan for an agent that left none.
 */
export async function pendingCount(db: Db, agentId: string): Promise<number> {
  const q = await findQueue(db, agentId);
  if (!q) return 0;
  const counts = await readablePendingCounts(db, q);
  return counts.waiting + counts.returned;
}
