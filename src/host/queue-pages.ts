import { sql } from 'kysely';
import { type CursorBinding, canonicalFilter, decodeCursor, encodeCursor } from '../core/cursor.js';
import { SluiceError } from '../core/errors.js';
import { type FitFrame, fitLargestPrefix } from '../core/fit.js';
import { utf8Length } from '../core/measure.js';
import { cutUtf8 } from '../core/preview.js';
import type { QueueRow } from '../store/ops/queues.js';
import type { InboxState, MessageSource } from '../store/schema.js';
import type { Db } from '../store/store.js';
import { requireQueueAccess } from './access.js';
import type { HostContext } from './context.js';
import type { Principal } from './principals.js';
import { parseJsonArray } from './projection.js';

/** Device-read limits (DESIGN.md §3.3); each is a setting with the design's default. */
export const PREVIEW_BYTES = 512;
export const SENDER_LABEL_BYTES = 128;
export const MAX_PAGE_SIZE = 200;
export const DEFAULT_PAGE_SIZE = 40;

/** One queue card as a device sees it: metadata and a short preview, never the whole body. */
export interface QueueCard {
  messageId: string;
  channelId: string;
  position: number;
  state: InboxState;
  source: MessageSource;
  senderLabels: string[];
  senderCount: number;
  preview: string;
  truncated: boolean;
  bodyBytes: number;
  createdAt: string;
  /** How many files the message carries (0 when none): the card's attachment mark. */
  attachmentCount: number;
  returnedReason?: string;
  returnedFailure?: { kind: string };
}

export type StaleReason = 'generation' | 'filter' | 'agent' | 'anchor-gone' | 'anchor-moved';

export interface QueuePageParams {
  agent: string;
  source?: MessageSource | undefined;
  cursor?: string | undefined;
  /** A message id: the page is centred on that card. */
  around?: string | undefined;
  size?: number | undefined;
}

/** A rendered result: the object and its exact JSON text (what the budget was measured on). */
export interface Rendered<T> {
  result: T;
  text: string;
}

export type QueuePageResult =
  | {
      status: 'page';
      generation: string;
      revision: number;
      rows: QueueCard[];
      hasMore: { before: boolean; after: boolean };
      previousCursor: string | null;
      nextCursor: string | null;
    }
  | { status: 'stale'; generation: string; revision: number; reason: StaleReason };

interface CardRow {
  position: number;
  message_id: string;
  channel_id: string;
  state: InboxState;
  source: MessageSource;
  body_bytes: number;
  created_at: string;
  returned_reason: string | null;
  failure_kind: string | null;
  author_name: string | null;
  head: string;
  attachments: string;
}

interface CardQuery {
  agentId: string;
  channelIds: readonly string[];
  source?: MessageSource | undefined;
  afterPosition?: number;
  beforePosition?: number;
  atPosition?: number;
  newestFirst: boolean;
  limit: number;
}

// Previews read only the head of a body (substr counts characters, at most 4 bytes each), so a
// page of multi-MB bodies costs a page of previews, not the bodies.
const HEAD_CHARS = PREVIEW_BYTES;

async function loadCards(db: Db, q: CardQuery): Promise<CardRow[]> {
  if (q.channelIds.length === 0) return [];
  let query = db
    .selectFrom('inbox')
    .innerJoin('messages', 'messages.seq', 'inbox.message_seq')
    .leftJoin('principals', 'principals.id', 'messages.author_id')
    .select([
      'inbox.position',
      'inbox.message_id',
      'inbox.channel_id',
      'inbox.state',
      'inbox.source',
      'inbox.body_bytes',
      'inbox.created_at',
      'inbox.returned_reason',
      'inbox.failure_kind',
      'principals.name as author_name',
      sql<string>`substr(messages.body, 1, ${HEAD_CHARS})`.as('head'),
      'messages.attachments',
    ])
    .where('inbox.agent_id', '=', q.agentId)
    .where('inbox.state', 'in', ['waiting', 'returned'])
    .where('inbox.channel_id', 'in', q.channelIds);
  if (q.source !== undefined) query = query.where('inbox.source', '=', q.source);
  if (q.afterPosition !== undefined) query = query.where('inbox.position', '>', q.afterPosition);
  if (q.beforePosition !== undefined) query = query.where('inbox.position', '<', q.beforePosition);
  if (q.atPosition !== undefined) query = query.where('inbox.position', '=', q.atPosition);
  const rows = await query
    .orderBy('inbox.position', q.newestFirst ? 'desc' : 'asc')
    .limit(q.limit)
    .execute();
  return rows.map((r) => ({ ...r, position: Number(r.position), body_bytes: Number(r.body_bytes) }));
}

/** The card for a row, with the preview cut on a code point within PREVIEW_BYTES. */
export function toCard(row: CardRow): QueueCard {
  const preview = cutUtf8(row.head, PREVIEW_BYTES);
  const label = cutUtf8(row.author_name ?? 'unknown', SENDER_LABEL_BYTES).text;
  const card: QueueCard = {
    messageId: row.message_id,
    channelId: row.channel_id,
    position: row.position,
    state: row.state,
    source: row.source,
    senderLabels: [label],
    senderCount: 1,
    preview: preview.text,
    truncated: preview.truncated || utf8Length(preview.text) < row.body_bytes,
    bodyBytes: row.body_bytes,
    createdAt: row.created_at,
    attachmentCount: parseJsonArray(row.attachments).length,
  };
  if (row.state === 'returned') {
    if (row.returned_reason !== null) card.returnedReason = cutUtf8(row.returned_reason, PREVIEW_BYTES).text;
    if (row.failure_kind !== null)
      card.returnedFailure = { kind: cutUtf8(row.failure_kind, SENDER_LABEL_BYTES).text };
  }
  return card;
}

/** A card with every optional field dropped: what an oversized first row is sent as. */
function minimalCard(card: QueueCard): QueueCard {
  return { ...stripOptional(card), senderLabels: [], preview: '', truncated: true };
}

function stripOptional(card: QueueCard): QueueCard {
  const { returnedReason: _r, returnedFailure: _f, ...rest } = card;
  return rest;
}

interface PageCursorPayload {
  /** Agent id, generation and canonical filter: a mismatch is a stale reply, not an error. */
  a: string;
  g: string;
  f: string;
  /** Direction of travel and the boundary card (position, id, state) it continues from. */
  d: 'after' | 'before';
  p: number;
  m: string;
  s: InboxState;
}

function pageBinding(actor: Principal): CursorBinding {
  return { caller: actor.id, filter: 'queue.page', target: 'queue' };
}

function parsePagePayload(raw: Record<string, unknown>): PageCursorPayload {
  const { a, g, f, d, p, m, s } = raw;
  if (
    typeof a !== 'string' ||
    typeof g !== 'string' ||
    typeof f !== 'string' ||
    (d !== 'after' && d !== 'before') ||
    typeof p !== 'number' ||
    !Number.isSafeInteger(p) ||
    typeof m !== 'string' ||
    typeof s !== 'string'
  ) {
    throw new SluiceError('invalid_cursor', 'invalid cursor: unexpected payload');
  }
  return { a, g, f, d, p, m, s: s as InboxState };
}

/**
 * One page of an agent's pending cards (DESIGN.md §3.3), keyset on position, rows always in FIFO
 * order. The complete JSON text of the result is at most `budgetBytes` UTF-8 bytes: rows are added
 * until the next would overflow, and a first row that alone does not fit is sent with its optional
 * fields dropped and `truncated: true`. A cursor from another generation, filter or agent, or whose
 * boundary card moved or left the queue, gives `{status:"stale"}` — never a misleading empty page.
 */
export async function readQueuePage(
  ctx: HostContext,
  actor: Principal,
  params: QueuePageParams,
  budgetBytes: number,
): Promise<Rendered<QueuePageResult>> {
  const size = params.size ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) {
    throw new SluiceError('invalid_params', `size must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  }
  if (params.cursor !== undefined && params.around !== undefined) {
    throw new SluiceError('invalid_params', 'give either cursor or around, not both');
  }
  const { agent, queue, channelIds } = await requireQueueAccess(ctx, actor, params.agent);
  const filter = canonicalFilter({ source: params.source ?? null });
  const db = ctx.store.db;
  const base = { agentId: agent.id, channelIds, source: params.source };
  const stale = (reason: StaleReason): Rendered<QueuePageResult> => {
    const result: QueuePageResult = {
      status: 'stale',
      generation: queue.generation,
      revision: queue.revision,
      reason,
    };
    return { result, text: JSON.stringify(result) };
  };

  const window: PageWindow = { before: [], after: [], beforeMore: false, afterMore: false, mode: 'forward' };
  if (params.cursor !== undefined) {
    const cursor = parsePagePayload(decodeCursor(ctx.cursorSecret, pageBinding(actor), params.cursor));
    if (cursor.a !== agent.id) return stale('agent');
    if (cursor.g !== queue.generation) return stale('generation');
    if (cursor.f !== filter) return stale('filter');
    const [anchor] = await loadCards(db, { ...base, atPosition: cursor.p, newestFirst: false, limit: 1 });
    if (!anchor || anchor.message_id !== cursor.m) return stale('anchor-gone');
    if (anchor.state !== cursor.s) return stale('anchor-moved');
    if (cursor.d === 'after') {
      const rows = await loadCards(db, {
        ...base,
        afterPosition: cursor.p,
        newestFirst: false,
        limit: size + 1,
      });
      window.after = rows.slice(0, size);
      window.afterMore = rows.length > size;
      window.beforeMore = true;
    } else {
      const rows = await loadCards(db, {
        ...base,
        beforePosition: cursor.p,
        newestFirst: true,
        limit: size + 1,
      });
      window.before = rows.slice(0, size).reverse();
      window.beforeMore = rows.length > size;
      window.afterMore = true;
      window.mode = 'backward';
    }
  } else if (params.around !== undefined) {
    const anchorEntry = await db
      .selectFrom('inbox')
      .select(['position'])
      .where('agent_id', '=', agent.id)
      .where('message_id', '=', params.around)
      .executeTakeFirst();
    const anchorPosition = anchorEntry ? Number(anchorEntry.position) : undefined;
    const [anchor] =
      anchorPosition === undefined
        ? []
        : await loadCards(db, { ...base, atPosition: anchorPosition, newestFirst: false, limit: 1 });
    if (!anchor) return stale('anchor-gone');
    // Centre the anchor, but fill the page from the other side near either end of the queue.
    const earlier = await loadCards(db, {
      ...base,
      beforePosition: anchor.position,
      newestFirst: true,
      limit: size,
    });
    const later = await loadCards(db, {
      ...base,
      afterPosition: anchor.position,
      newestFirst: false,
      limit: size,
    });
    const half = Math.floor((size - 1) / 2);
    const beforeCount = Math.min(earlier.length, Math.max(half, size - 1 - later.length));
    const afterCount = Math.min(later.length, size - 1 - beforeCount);
    window.before = earlier.slice(0, beforeCount).reverse();
    window.beforeMore = earlier.length > beforeCount;
    window.after = [anchor, ...later.slice(0, afterCount)];
    window.afterMore = later.length > afterCount;
    window.mode = 'around';
  } else {
    const rows = await loadCards(db, { ...base, newestFirst: false, limit: size + 1 });
    window.after = rows.slice(0, size);
    window.afterMore = rows.length > size;
  }
  return renderPage(ctx, actor, queue, filter, window, budgetBytes);
}

interface PageWindow {
  /** Candidate rows before the anchor (ascending) and from the anchor on (ascending). */
  before: CardRow[];
  after: CardRow[];
  /** Whether more rows exist beyond the fetched candidates in each direction. */
  beforeMore: boolean;
  afterMore: boolean;
  /** forward keeps a prefix, backward a suffix, around keeps the anchor (first of `after`). */
  mode: 'forward' | 'backward' | 'around';
}

function renderPage(
  ctx: HostContext,
  actor: Principal,
  queue: QueueRow,
  filter: string,
  window: PageWindow,
  budgetBytes: number,
): Rendered<QueuePageResult> {
  const rows = [...window.before, ...window.after];
  const cards = rows.map(toCard);
  const serialized = cards.map((c) => JSON.stringify(c));
  const cursorFor = (card: QueueCard, d: 'after' | 'before') =>
    encodeCursor(ctx.cursorSecret, pageBinding(actor), {
      a: queue.agent_id,
      g: queue.generation,
      f: filter,
      d,
      p: card.position,
      m: card.messageId,
      s: card.state,
    } satisfies PageCursorPayload);
  const head = `{"status":"page","generation":${JSON.stringify(queue.generation)},"revision":${queue.revision},"rows":[`;
  // The frame for the rows [first, end): hasMore and cursors depend on which rows are kept.
  const frameFor = (list: QueueCard[], first: number, end: number): FitFrame => {
    const before = first > 0 || window.beforeMore;
    const after = end < list.length || window.afterMore;
    const previousCursor = before && end > first ? cursorFor(list[first] as QueueCard, 'before') : null;
    const nextCursor = after && end > first ? cursorFor(list[end - 1] as QueueCard, 'after') : null;
    return {
      before: head,
      after: `],"hasMore":{"before":${before},"after":${after}},"previousCursor":${JSON.stringify(previousCursor)},"nextCursor":${JSON.stringify(nextCursor)}}`,
    };
  };
  const budgets = { utf8: budgetBytes };

  let first = 0;
  let end = 0;
  if (cards.length > 0) {
    if (window.mode === 'forward') {
      end = fitLargestPrefix({ items: serialized, budgets, frame: (n) => frameFor(cards, 0, n) }).count;
    } else if (window.mode === 'backward') {
      // A suffix of the rows is a prefix of the reversed rows, with the same joined length.
      const reversed = [...serialized].reverse();
      const n = fitLargestPrefix({
        items: reversed,
        budgets,
        frame: (k) => frameFor(cards, cards.length - k, cards.length),
      }).count;
      first = cards.length - n;
      end = cards.length;
    } else {
      // Drop earlier rows until the kept prefix reaches the anchor.
      const anchorIndex = window.before.length;
      for (first = 0; first <= anchorIndex; first++) {
        const n = fitLargestPrefix({
          items: serialized.slice(first),
          budgets,
          frame: (k) => frameFor(cards, first, first + k),
        }).count;
        end = first + n;
        if (end > anchorIndex) break;
      }
      if (first > anchorIndex) {
        first = anchorIndex;
        end = anchorIndex;
      }
    }
  }
  if (cards.length > 0 && end === first) {
    // Progress (I5): the card that must lead the page is sent without its optional fields.
    const index =
      window.mode === 'backward' ? cards.length - 1 : window.mode === 'around' ? window.before.length : 0;
    const lone = minimalCard(cards[index] as QueueCard);
    const list = cards.slice();
    list[index] = lone;
    const frame = frameFor(list, index, index + 1);
    const text = frame.before + JSON.stringify(lone) + frame.after;
    if (utf8Length(text) > budgetBytes) {
      throw new SluiceError('too_large', `the reply budget (${budgetBytes} bytes) cannot hold a single card`);
    }
    return { result: JSON.parse(text) as QueuePageResult, text };
  }
  const frame = frameFor(cards, first, end);
  const text = frame.before + serialized.slice(first, end).join(',') + frame.after;
  return { result: JSON.parse(text) as QueuePageResult, text };
}

export type BodyStatus = 'gone' | 'handed-off' | 'state-changed';

export type QueueReadResult =
  | {
      status: 'body';
      messageId: string;
      bodyBytes: number;
      part: { offset: number; text: string };
      nextCursor: string | null;
    }
  | { status: BodyStatus; messageId: string; state: InboxState | null };

interface ReadCursorPayload {
  o: number;
  r: number;
}

/** Verifies a body-part cursor and returns its offset and the message revision it was issued for. */
export function decodeBodyCursor(ctx: HostContext, binding: CursorBinding, token: string): ReadCursorPayload {
  const raw = decodeCursor(ctx.cursorSecret, binding, token);
  const { o, r } = raw;
  if (typeof o !== 'number' || !Number.isSafeInteger(o) || o < 0 || typeof r !== 'number') {
    throw new SluiceError('invalid_cursor', 'invalid cursor: unexpected payload');
  }
  return { o, r };
}

/**
 * The exact stored body of a pending card, in parts: each complete result text fits
 * `budgetBytes`, parts never split a surrogate pair and joined in order they equal the body.
 * A card that settled says so (`handed-off` once the agent consumed it, `gone` once withdrawn or
 * archived), and a body edited since the cursor was issued is `state-changed`.
 */
export async function readQueueBody(
  ctx: HostContext,
  actor: Principal,
  params: { agent: string; messageId: string; cursor?: string | undefined },
  budgetBytes: number,
): Promise<Rendered<QueueReadResult>> {
  const { agent, channelIds } = await requireQueueAccess(ctx, actor, params.agent);
  const row = await ctx.store.db
    .selectFrom('inbox')
    .innerJoin('messages', 'messages.seq', 'inbox.message_seq')
    .select(['inbox.state', 'inbox.channel_id', 'messages.body', 'messages.revision', 'messages.deleted_at'])
    .where('inbox.agent_id', '=', agent.id)
    .where('inbox.message_id', '=', params.messageId)
    .executeTakeFirst();
  if (!row || !channelIds.includes(row.channel_id)) {
    throw new SluiceError(
      'not_found',
      `no message ${JSON.stringify(params.messageId).slice(0, 80)} in ${agent.name}'s queue`,
    );
  }
  const settled = (status: BodyStatus): Rendered<QueueReadResult> => {
    const result: QueueReadResult = { status, messageId: params.messageId, state: row.state };
    return { result, text: JSON.stringify(result) };
  };
  if (row.state === 'handled') return settled('handed-off');
  if (row.state !== 'waiting' && row.state !== 'returned') return settled('gone');
  if (row.deleted_at !== null) return settled('gone');
  const binding: CursorBinding = {
    caller: actor.id,
    filter: canonicalFilter({ method: 'queue.read', agent: agent.id }),
    target: params.messageId,
  };
  let offset = 0;
  if (params.cursor !== undefined) {
    const cursor = decodeBodyCursor(ctx, binding, params.cursor);
    if (cursor.r !== Number(row.revision)) return settled('state-changed');
    offset = cursor.o;
  }
  return renderBodyPart({
    body: row.body,
    offset,
    budgetBytes,
    head: `{"status":"body","messageId":${JSON.stringify(params.messageId)},"bodyBytes":${utf8Length(row.body)},"part":{"offset":${offset},"text":`,
    tail: (next) =>
      `},"nextCursor":${JSON.stringify(next === null ? null : encodeCursor(ctx.cursorSecret, binding, { o: next, r: Number(row.revision) }))}}`,
  });
}

export interface BodyPartOptions {
  body: string;
  /** Where this part starts, in UTF-16 units. */
  offset: number;
  budgetBytes: number;
  /** Text before the part's JSON string literal, and after it for a given next offset. */
  head: string;
  tail: (nextOffset: number | null) => string;
}

/**
 * Renders `head + JSON.stringify(part) + tail(next)` with the longest part of `body` from
 * `offset` that keeps the whole text within `budgetBytes` UTF-8 bytes. Costs follow
 * `JSON.stringify` exactly (a lone surrogate is a 6-byte escape, a pair 4 bytes), and a part never
 * ends between the halves of a surrogate pair.
 */
export function renderBodyPart<T>(opts: BodyPartOptions): Rendered<T> {
  const { body, offset } = opts;
  if (offset > body.length)
    throw new SluiceError('invalid_cursor', 'invalid cursor: offset past the end of the body');
  // The longest tail is the one with the largest next offset (most digits in its cursor).
  const tailBytes = Math.max(utf8Length(opts.tail(null)), utf8Length(opts.tail(body.length)));
  const available = opts.budgetBytes - utf8Length(opts.head) - tailBytes - 2;
  const end = longestEscapedPrefix(body, offset, available);
  if (end === offset && offset < body.length) {
    throw new SluiceError(
      'too_large',
      `the reply budget (${opts.budgetBytes} bytes) cannot hold any of the body`,
    );
  }
  const text =
    opts.head + JSON.stringify(body.slice(offset, end)) + opts.tail(end < body.length ? end : null);
  return { result: JSON.parse(text) as T, text };
}

/** Largest end such that the JSON escape of `body.slice(start, end)` is at most `budget` UTF-8 bytes. */
export function longestEscapedPrefix(body: string, start: number, budget: number): number {
  let bytes = 0;
  let i = start;
  while (i < body.length) {
    const c = body.charCodeAt(i);
    let width: number;
    let step = 1;
    if (c < 0x20) width = c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
    else if (c === 0x22 || c === 0x5c) width = 2;
    else if (c < 0x80) width = 1;
    else if (c < 0x800) width = 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = body.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        width = 4;
        step = 2;
      } else width = 6;
    } else if (c >= 0xdc00 && c <= 0xdfff) width = 6;
    else width = 3;
    if (bytes + width > budget) break;
    bytes += width;
    i += step;
  }
  return i;
}
