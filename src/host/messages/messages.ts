import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import type { MessageOrigin } from '../../core/provenance.js';
import { quoteInput, requireWellFormedFields } from '../../core/text.js';
import { findChannelById } from '../../store/ops/channels.js';
import { findMediaByIds, linkMessageMedia } from '../../store/ops/media.js';
import {
  findMessageById,
  findMessageForChange,
  findMessagesBySeqs,
  type MessageRow,
} from '../../store/ops/messages.js';
import { findPrincipalsByIds } from '../../store/ops/principals.js';
import { storeAndFanOut } from '../../store/ops/send.js';
import type { MessageSource, PrincipalKind } from '../../store/schema.js';
import type { Db } from '../../store/store.js';
import { type Channel, peekTarget, requireMember, resolveTarget } from '../channels/channels.js';
import { announceCommit, type HostContext, newMessageId, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import {
  claimFor,
  type IdempotencyClaim,
  KeyTakenMeanwhile,
  priorSend,
  recordSend,
  validateIdempotencyKey,
} from './idempotent-sends.js';
import {
  type AttachmentRef,
  captionFor,
  excerptOf,
  type MessageProjection,
  projectMessage,
  type ReplyContext,
} from './projection.js';

export interface SendInput {
  /** `#channel`, a channel id, or a principal name (its DM channel). */
  to: string;
  body: string;
  subject?: string | undefined;
  replyTo?: string | undefined;
  actions?: unknown[] | undefined;
  attachmentIds?: readonly string[] | undefined;
  /**
   * A client's key for retrying safely: the same key from the same principal returns the first
   * result and stores nothing; with another request it is `conflict`. Kept at least 24 hours.
   */
  idempotencyKey?: string | undefined;
  /** How it came in when not sent directly: only the Telegram bridge sets it (never a client). */
  origin?: MessageOrigin | undefined;
}

export { captionFor } from './projection.js';

export interface SentMessage {
  message_id: string;
  channel_id: string;
  seq: number;
}

/** Unknown or malformed provenance never counts as a person. */
export function sourceOf(kind: unknown): MessageSource {
  if (kind === 'person') return 'person';
  if (kind === 'agent') return 'agent';
  return 'unknown';
}

/** Checks a body and subject against the host's limits (a send, an edit). */
export function validateSend(ctx: HostContext, input: Omit<SendInput, 'to'>): void {
  if (typeof input.body !== 'string') throw new SluiceError('invalid_params', 'body must be a string');
  if (input.subject !== undefined && typeof input.subject !== 'string') {
    throw new SluiceError('invalid_params', 'subject must be a string');
  }
  // Every surface's text reaches the store through here: refused unless it can be stored exactly.
  requireWellFormedFields({ body: input.body, subject: input.subject });
  validateIdempotencyKey(input.idempotencyKey);
  if (input.actions !== undefined && !Array.isArray(input.actions)) {
    throw new SluiceError('invalid_params', 'actions must be an array');
  }
  const bytes = utf8Length(input.body);
  if (bytes > ctx.limits.maxBodyBytes) {
    throw new SluiceError('too_large', `body is ${bytes} bytes; the limit is ${ctx.limits.maxBodyBytes}`);
  }
}

/** Sends a message: stores it, fans it out to agent members' inboxes and logs events, in one transaction. */
export async function sendMessage(
  ctx: HostContext,
  actor: Principal,
  input: SendInput,
): Promise<SentMessage> {
  validateSend(ctx, input);
  const claim = claimFor(input.idempotencyKey, {
    op: 'send',
    target: input.to,
    ...input,
    attachments: await attachmentFingerprints(ctx, actor, input),
  });
  // A retry returns the first result before anything else, even if the target changed since.
  const prior = claim && (await priorSend(ctx.store.db, actor.id, claim, ctx.now()));
  if (prior) return prior;
  // A principal target's DM is created on first use: refuse what can be refused before creating
  // it, so a refused send changes nothing (found by the bad-input campaign, proof/fuzz-rpc.ts).
  const existing = knownDm(ctx, actor, input.to) ?? (await peekTarget(ctx, actor, input.to));
  if (!existing) await refuseBeforeNewDm(ctx, actor, input);
  const channel = existing ?? (await resolveTarget(ctx, actor, input.to));
  rememberDm(ctx, actor, input.to, channel);
  return storeMessage(ctx, actor, channel, input, claim);
}

// The DM a principal-name target means, once found, holds for good: principals are never renamed
// or removed and a DM's key never changes (in any process), so repeated sends skip looking it up.
// Membership is not assumed: the send's insert checks the actor's current membership itself.
const knownDms = new WeakMap<HostContext['store'], Map<string, Channel>>();
const KNOWN_DMS_PER_STORE = 1024;

function knownDm(ctx: HostContext, actor: Principal, target: unknown): Channel | undefined {
  if (typeof target !== 'string') return undefined;
  return knownDms.get(ctx.store)?.get(`${actor.id}\n${target}`);
}

function rememberDm(ctx: HostContext, actor: Principal, target: string, channel: Channel): void {
  if (channel.kind !== 'dm' || target.startsWith('#') || target.startsWith('c_')) return;
  let dms = knownDms.get(ctx.store);
  if (!dms) {
    dms = new Map();
    knownDms.set(ctx.store, dms);
  }
  if (dms.size >= KNOWN_DMS_PER_STORE) dms.delete(dms.keys().next().value as string);
  dms.set(`${actor.id}\n${target}`, channel);
}

/** The refusals of sendToChannel that need no channel; a DM about to be created holds no reply_to. */
async function refuseBeforeNewDm(ctx: HostContext, actor: Principal, input: SendInput): Promise<void> {
  const attachments = await resolveAttachments(ctx, actor, input.attachmentIds ?? []);
  if (captionFor(input.body, attachments).trim() === '') {
    throw new SluiceError('invalid_params', 'message body is empty');
  }
  if (input.replyTo !== undefined)
    throw new SluiceError('not_found', 'reply_to names no message in this channel');
}

/** Sends into a channel the caller already resolved (no idempotency key: see {@link sendMessage}). */
export async function sendToChannel(
  ctx: HostContext,
  actor: Principal,
  channel: Channel,
  input: Omit<SendInput, 'to' | 'idempotencyKey'>,
): Promise<SentMessage> {
  validateSend(ctx, input);
  return storeMessage(ctx, actor, channel, input, undefined);
}

/**
 * Stores the message and, for a keyed send, its key in the same transaction: a crash never keeps
 * one without the other, and of concurrent retries exactly one stores (the key's primary key).
 * Callers have run `validateSend` on the input.
 */
async function storeMessage(
  ctx: HostContext,
  actor: Principal,
  channel: Channel,
  input: Omit<SendInput, 'to'>,
  claim: IdempotencyClaim | undefined,
): Promise<SentMessage> {
  const attachments = await resolveAttachments(ctx, actor, input.attachmentIds ?? []);
  const body = captionFor(input.body, attachments);
  if (body.trim() === '') throw new SluiceError('invalid_params', 'message body is empty');
  if (input.replyTo !== undefined) {
    const parent = await findMessageById(ctx.store.db, input.replyTo);
    if (!parent || parent.channel_id !== channel.id) {
      throw new SluiceError('not_found', 'reply_to names no message in this channel');
    }
  }
  const at = nowIso(ctx);
  const id = newMessageId(ctx);
  const bodyBytes = utf8Length(body);
  const actions = JSON.stringify(input.actions ?? []);
  const now = ctx.now();
  const insertAndFanOut = async (trx: Db): Promise<SentMessage> => {
    const seq = await storeAndFanOut(trx, {
      id,
      channel_id: channel.id,
      author_id: actor.id,
      created_at: at,
      body,
      body_bytes: bodyBytes,
      subject: input.subject ?? null,
      reply_to: input.replyTo ?? null,
      actions,
      attachments: JSON.stringify(attachments),
      origin: input.origin ?? null,
      source: sourceOf(actor.kind),
    });
    if (seq === undefined) throw new SluiceError('not_member', 'you are not a member of that channel');
    await linkMessageMedia(
      trx,
      seq,
      attachments.map((a) => a.attachment_id),
    );
    const sent = { message_id: id, channel_id: channel.id, seq };
    if (claim) await recordSend(trx, actor.id, claim, sent, now);
    return sent;
  };
  let replayed = false;
  let sent: SentMessage;
  try {
    // Acknowledged only after the commit (with other concurrent sends: one group, one fsync).
    // Unkeyed and without attachments, a send is one statement on PostgreSQL (sluice_send).
    const oneStatement = !claim && attachments.length === 0;
    sent = await ctx.store.sendTransaction(
      async (trx) => {
        // A retry that raced this one and committed first (or ran earlier in the same group) is seen
        // here; one still uncommitted meets the key's primary key in recordSend instead.
        const prior = claim && (await priorSend(trx, actor.id, claim, now));
        replayed = prior !== undefined;
        return prior ?? insertAndFanOut(trx);
      },
      { oneStatement },
    );
  } catch (err) {
    // A concurrent retry (another host, or a parallel PostgreSQL send) took the key first: its result wins.
    const prior =
      err instanceof KeyTakenMeanwhile && claim && (await priorSend(ctx.store.db, actor.id, claim, now));
    if (!prior) throw err;
    return prior;
  }
  if (!replayed) announceCommit(ctx);
  return sent;
}

/**
 * A keyed send's attachments as content for its fingerprint (idempotent-sends.ts): a client that
 * retries after a dropped connection uploads the file again and gets a new id, and that retry must
 * replay the first result, not be refused as `conflict`. Only keyed sends pay the lookup.
 */
async function attachmentFingerprints(
  ctx: HostContext,
  actor: Principal,
  input: Pick<SendInput, 'idempotencyKey' | 'attachmentIds'>,
): Promise<string[] | undefined> {
  const ids = input.attachmentIds;
  if (input.idempotencyKey === undefined || !Array.isArray(ids) || ids.length === 0) return undefined;
  const strings = ids.filter((id): id is string => typeof id === 'string').slice(0, 64);
  const rows = await findMediaByIds(ctx.store.db, strings);
  const mine = new Map(rows.filter((r) => r.created_by === actor.id).map((r) => [r.id, r]));
  return ids.map((id) => {
    const row = typeof id === 'string' ? mine.get(id) : undefined;
    return row ? `sha256:${row.sha256}:${row.name}` : `id:${String(id)}`;
  });
}

async function resolveAttachments(
  ctx: HostContext,
  actor: Principal,
  ids: readonly string[],
): Promise<AttachmentRef[]> {
  if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string')) {
    throw new SluiceError('invalid_params', 'attachments must be an array of attachment ids');
  }
  if (ids.length > 32) throw new SluiceError('invalid_params', 'at most 32 attachments per message');
  const rows = await findMediaByIds(ctx.store.db, ids);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => {
    const row = byId.get(id);
    // Only the uploader may attach an upload: ids are not capabilities to someone else's bytes.
    if (!row || row.created_by !== actor.id)
      throw new SluiceError('not_found', `no attachment ${quoteInput(id)}`);
    return { attachment_id: row.id, name: row.name, mime: row.mime, size: row.size };
  });
}

/** Replies in the parent's channel. */
export async function replyToMessage(
  ctx: HostContext,
  actor: Principal,
  parentId: string,
  input: Omit<SendInput, 'to' | 'replyTo'>,
): Promise<SentMessage> {
  validateSend(ctx, input);
  const claim = claimFor(input.idempotencyKey, {
    op: 'reply',
    target: parentId,
    ...input,
    attachments: await attachmentFingerprints(ctx, actor, input),
  });
  const prior = claim && (await priorSend(ctx.store.db, actor.id, claim, ctx.now()));
  if (prior) return prior;
  const parent = await getMessageRow(ctx, actor, parentId);
  const channel = await findChannelById(ctx.store.db, parent.channel_id);
  if (!channel) throw new SluiceError('not_found', 'the channel of that message is gone');
  return storeMessage(ctx, actor, channel, { ...input, replyTo: parent.id }, claim);
}

/**
 * A message row the actor may read (current member of its channel), else not_found/not_member.
 * Given a write transaction `db`, the check holds until it commits (the row is read for change).
 */
export async function getMessageRow(
  ctx: HostContext,
  actor: Principal,
  messageId: string,
  db: Db = ctx.store.db,
): Promise<MessageRow> {
  const row = typeof messageId === 'string' ? await findMessageForChange(db, messageId) : undefined;
  if (!row || row.deleted_at !== null)
    throw new SluiceError('not_found', `no message ${quoteInput(messageId)}`);
  await requireMember(db, row.channel_id, actor.id);
  return row;
}

/** Projections for rows, in order, loading authors and reply parents in two batched queries. */
export async function loadProjections(db: Db, rows: readonly MessageRow[]): Promise<MessageProjection[]> {
  const parentIds = [...new Set(rows.flatMap((r) => (r.reply_to ? [r.reply_to] : [])))];
  const parents = new Map<string, MessageRow>();
  for (const id of parentIds) {
    const p = await findMessageById(db, id);
    if (p) parents.set(id, p);
  }
  const authorIds = [...new Set([...rows, ...parents.values()].map((r) => r.author_id))];
  const authors = new Map((await findPrincipalsByIds(db, authorIds)).map((p) => [p.id, p]));
  return rows.map((row) => {
    const author = authors.get(row.author_id) ?? {
      id: row.author_id,
      name: 'unknown',
      kind: 'unknown' as PrincipalKind,
    };
    let reply: ReplyContext | undefined;
    if (row.reply_to) {
      const parent = parents.get(row.reply_to);
      reply = {
        message_id: row.reply_to,
        author: parent ? (authors.get(parent.author_id)?.name ?? 'unknown') : 'unknown',
        excerpt: parent && parent.deleted_at === null ? excerptOf(parent.body) : '',
      };
    }
    return projectMessage(row, author, reply);
  });
}

export async function readProjection(
  ctx: HostContext,
  actor: Principal,
  messageId: string,
): Promise<MessageProjection> {
  const row = await getMessageRow(ctx, actor, messageId);
  const [projection] = await loadProjections(ctx.store.db, [row]);
  return projection as MessageProjection;
}

export async function projectionsBySeqs(db: Db, seqs: readonly number[]): Promise<MessageProjection[]> {
  return loadProjections(db, await findMessagesBySeqs(db, seqs));
}
