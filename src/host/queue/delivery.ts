import {
  type AttachmentCopy,
  DEFAULT_DELIVERY_LIMITS,
  type DeliveryCandidate,
  type DeliveryLimits,
  type RenderedDelivery,
  renderDelivery,
  renderMetadataNotice,
} from '../../core/envelope.js';
import { SluiceError } from '../../core/errors.js';
import { listActiveChannelIds } from '../../store/ops/channels.js';
import { listInboxEntries } from '../../store/ops/inbox.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import type { MessageProjection } from '../messages/projection.js';
import { type RelationOf, relationsFor } from '../messages/provenance.js';
import { type InboxListing, pendingCount, requireAgent, withProjections } from './inbox.js';

export interface DeliveryOptions {
  limits?: Partial<DeliveryLimits> | undefined;
  /** UTF-16 units an adapter wraps around the text (counted against `limits.maxUnits`). */
  wrapperUnits?: number | undefined;
  /**
   * Attachment copy for a harness that reads files (hooks): materialised per agent; a copy that
   * could not be made is listed with the reason instead of a path.
   */
  attachmentPath?:
    | ((attachment: { attachment_id: string; name: string }) => Promise<AttachmentCopy>)
    | undefined;
}

function checkLimits(limits: Partial<DeliveryLimits> | undefined): void {
  for (const [key, value] of Object.entries(limits ?? {})) {
    if (value === undefined) continue;
    if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 1_000_000) {
      throw new SluiceError('invalid_params', `${key} must be an integer from 1 to 1000000`);
    }
  }
}

/**
 * The agent's delivery: the largest whole FIFO prefix of pending bodies within the limits.
 * Read-only: it never archives, settles or records coverage.
 */
export async function deliveryFor(
  ctx: HostContext,
  agent: Principal,
  options: DeliveryOptions = {},
): Promise<RenderedDelivery> {
  return (await renderedDeliveryFor(ctx, agent, options)).delivery;
}

/** A rendered delivery with the projections its candidates were rendered from, by message id. */
export interface RenderedFrom {
  delivery: RenderedDelivery;
  /** What the text shows of each message, as data: a turn compares it with the message now. */
  projections: ReadonlyMap<string, MessageProjection>;
}

/** {@link deliveryFor}, with what it was rendered from (drivers cover the carried messages by it). */
export async function renderedDeliveryFor(
  ctx: HostContext,
  agent: Principal,
  options: DeliveryOptions = {},
): Promise<RenderedFrom> {
  requireAgent(agent);
  checkLimits(options.limits);
  const maxMessages = options.limits?.maxMessages ?? DEFAULT_DELIVERY_LIMITS.maxMessages;
  // The rows and the count from one snapshot: read apart, a send committing between them was
  // counted but not listed, and a waiter woke with an envelope that carried nothing.
  const { listings, pending } = await ctx.store.readSnapshot(async (db) => {
    const channelIds = await listActiveChannelIds(db, agent.id);
    const entries = await listInboxEntries(db, agent.id, { channelIds, limit: maxMessages + 1 });
    return { listings: await withProjections(db, entries), pending: await pendingCount(db, agent.id) };
  });
  const candidates = await toCandidates(listings, await relationsFor(ctx, agent), options.attachmentPath);
  const totalPending = Math.max(pending, candidates.length);
  const delivery = renderDelivery({
    agent: agent.name,
    totalPending,
    candidates,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.wrapperUnits !== undefined ? { wrapperUnits: options.wrapperUnits } : {}),
  });
  return { delivery, projections: projectionsOf(listings) };
}

function projectionsOf(listings: readonly InboxListing[]): Map<string, MessageProjection> {
  return new Map(listings.map((l) => [l.projection.message_id, l.projection]));
}

type AttachmentPath = DeliveryOptions['attachmentPath'];

async function toCandidates(
  listings: readonly InboxListing[],
  relationOf: RelationOf,
  attachmentPath: AttachmentPath,
): Promise<DeliveryCandidate[]> {
  const candidates: DeliveryCandidate[] = [];
  for (const { projection, channelName } of listings) {
    const attachments = [];
    for (const a of projection.attachments) {
      const copy = attachmentPath ? await attachmentPath(a) : undefined;
      if (copy === undefined) attachments.push(a);
      else if ('path' in copy) attachments.push({ ...a, path: copy.path });
      else attachments.push({ ...a, path_error: copy.pathError });
    }
    candidates.push({
      id: projection.message_id,
      channel: channelName,
      from: projection.author.name,
      sender: relationOf(projection.author),
      ...(projection.via === undefined ? {} : { via: projection.via }),
      createdAt: projection.created_at,
      subject: projection.subject ?? null,
      replyTo: projection.reply_to?.message_id ?? null,
      body: projection.body,
      attachments,
    });
  }
  return candidates;
}

/**
 * The pending messages queued behind `carried` (ids a running turn already carries), as delivery
 * candidates, at most `maxMessages` of them. Undefined when the carried messages that are still
 * pending no longer lead the queue in order (steering would overtake, I7) or nothing is behind.
 * `totalPending` counts what is pending behind the carried ones.
 */
export async function candidatesBehind(
  ctx: HostContext,
  agent: Principal,
  carried: readonly string[],
  maxMessages: number,
  attachmentPath?: AttachmentPath,
): Promise<
  | {
      candidates: DeliveryCandidate[];
      totalPending: number;
      projections: ReadonlyMap<string, MessageProjection>;
    }
  | undefined
> {
  const { entries, pending, listings } = await ctx.store.readSnapshot(async (db) => {
    const channelIds = await listActiveChannelIds(db, agent.id);
    const entries = await listInboxEntries(db, agent.id, {
      channelIds,
      limit: carried.length + maxMessages + 1,
    });
    return {
      entries,
      pending: await pendingCount(db, agent.id),
      listings: await withProjections(db, entries),
    };
  });
  const carriedIds = new Set(carried);
  let start = 0;
  while (start < entries.length && carriedIds.has((entries[start] as { message_id: string }).message_id))
    start++;
  const behind = entries.slice(start);
  if (behind.length === 0 || behind.some((e) => carriedIds.has(e.message_id))) return undefined;
  const behindListings = listings.slice(start);
  const candidates = await toCandidates(behindListings, await relationsFor(ctx, agent), attachmentPath);
  return {
    candidates,
    projections: projectionsOf(behindListings),
    totalPending: Math.max(pending - start, candidates.length),
  };
}

/** The short metadata notification for transports that cannot take bodies. */
export async function metadataNoticeFor(ctx: HostContext, agent: Principal): Promise<string> {
  requireAgent(agent);
  const { oldest, pending } = await ctx.store.readSnapshot(async (db) => {
    const channelIds = await listActiveChannelIds(db, agent.id);
    const [oldest] = await withProjections(
      db,
      await listInboxEntries(db, agent.id, { channelIds, limit: 1 }),
    );
    return { oldest, pending: await pendingCount(db, agent.id) };
  });
  return renderMetadataNotice({
    agent: agent.name,
    totalPending: pending,
    oldest: oldest
      ? {
          id: oldest.projection.message_id,
          from: oldest.projection.author.name,
          sender: (await relationsFor(ctx, agent))(oldest.projection.author),
          ...(oldest.projection.via === undefined ? {} : { via: oldest.projection.via }),
          createdAt: oldest.projection.created_at,
        }
      : null,
  });
}
