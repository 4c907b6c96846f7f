import { type CursorBinding, canonicalFilter, decodeCursor, encodeCursor } from '../core/cursor.js';
import { isSluiceError, SluiceError, type SluiceErrorCode } from '../core/errors.js';
import { fitJsonPage } from '../core/fit.js';
import { type FragmentResult, fragmentAt, sha256Hex } from '../core/fragment.js';
import { utf8Length } from '../core/measure.js';
import { listActiveChannelIds } from '../store/ops/channels.js';
import type { MessageRow } from '../store/ops/messages.js';
import { findQueue } from '../store/ops/queues.js';
import { PENDING_STATES } from '../store/schema.js';
import type { Db } from '../store/store.js';
import { requireMember } from './channels.js';
import type { HostContext } from './context.js';
import { requireAgent } from './inbox.js';
import { getMessageRow, loadProjections } from './messages.js';
import type { Principal } from './principals.js';
import { type MessageProjection, projectionText } from './projection.js';
import { offerReads, type PendingReceipt } from './receipts.js';
import { type CoverageRead, openTurnOf } from './turns.js';

/** `channel_read` parameters (DESIGN.md §3.1). */
export interface ChannelReadParams {
  channel_id?: string | undefined;
  unread?: boolean | undefined;
  cursor?: string | undefined;
  limit?: number | undefined;
  message_id?: string | undefined;
  content_cursor?: string | undefined;
}

/** Where to read an oversized message whole: `channel_read {message_id}`. */
export interface ReadContentLocator {
  channel_id: string;
  message_id: string;
}

/** A page of complete projections, the largest prefix of the fetched candidates that fits. */
export interface PageResult {
  messages: MessageProjection[];
  nextCursor: string | null;
  /** Fetched candidates left out of this page (not a total over history). */
  omitted: number;
  outputLimit: number;
  readContent?: ReadContentLocator;
}

/** A read result: the exact text the reader receives, and the value it encodes. */
export interface ReadOutcome<T> {
  text: string;
  value: T;
  /**
   * In an open turn, what the read adds to the turn's coverage once `text` reached the client:
   * the surface that hands it over confirms it (host/receipts.ts). Absent for a peek.
   */
  receipt?: PendingReceipt | undefined;
}

export const DEFAULT_PAGE_LIMIT = 20;

/** The output budgets of a tool result: UTF-16 units, and UTF-8 bytes when that cap is set. */
export function toolBudgets(ctx: HostContext): { utf16: number; utf8?: number } {
  const bytes = ctx.limits.toolOutputBytes;
  return bytes > 0
    ? { utf16: ctx.limits.toolOutputUnits, utf8: bytes }
    : { utf16: ctx.limits.toolOutputUnits };
}

/** True when a result text fits every tool budget. */
export function fitsToolOutput(ctx: HostContext, text: string): boolean {
  const budgets = toolBudgets(ctx);
  return text.length <= budgets.utf16 && (budgets.utf8 === undefined || utf8Length(text) <= budgets.utf8);
}
export const MAX_PAGE_LIMIT = 100;
/** Longest search query accepted, in UTF-16 units (the FTS query keeps at most 32 terms anyway). */
export const MAX_QUERY_UNITS = 1000;

/** Cursor payload keys, kept short: the token is part of every page the model receives. */
type PagePayload = { k: number };
type ContentPayload = { o: number };

/** One fetched candidate: its keyset value (inbox position or message seq) and its row. */
interface Candidate {
  key: number;
  row: MessageRow;
}

/**
 * `channel_read`: an unread (FIFO) or history (newest-first) page, or one message by `message_id`
 * (whole when it fits, else fragments via `content_cursor`). Rechecks the caller's current
 * membership on every call. In the agent's open turn the outcome carries a receipt for what the
 * result holds whole (pages) or the slice it holds (fragments); nothing counts until the surface
 * confirms the result reached the client. With no open turn it is a peek.
 */
export async function channelRead(
  ctx: HostContext,
  agent: Principal,
  params: ChannelReadParams,
): Promise<ReadOutcome<PageResult | FragmentResult>> {
  validateReadParams(params);
  if (params.message_id !== undefined) return readMessage(ctx, agent, params);
  const unread = params.unread ?? params.channel_id === undefined;
  const limit = params.limit ?? DEFAULT_PAGE_LIMIT;
  return unread
    ? readUnreadPage(ctx, agent, params.channel_id, params.cursor, limit)
    : readHistoryPage(ctx, agent, params.channel_id, params.cursor, limit);
}

function validateReadParams(params: ChannelReadParams): void {
  const strings = ['channel_id', 'cursor', 'message_id', 'content_cursor'] as const;
  for (const key of strings) {
    const value = params[key];
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw new SluiceError('invalid_params', `${key} must be a non-empty string`);
    }
  }
  if (params.unread !== undefined && typeof params.unread !== 'boolean') {
    throw new SluiceError('invalid_params', 'unread must be true or false');
  }
  validateLimit(params.limit);
  if (params.message_id !== undefined) {
    if (params.cursor !== undefined || params.limit !== undefined || params.unread !== undefined) {
      throw new SluiceError(
        'invalid_params',
        'message_id reads one message: use content_cursor to continue it, not cursor, limit or unread',
      );
    }
  } else if (params.content_cursor !== undefined) {
    throw new SluiceError('invalid_params', 'content_cursor needs the message_id it was returned with');
  }
}

function validateLimit(limit: unknown): void {
  if (
    limit !== undefined &&
    (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > MAX_PAGE_LIMIT)
  ) {
    throw new SluiceError('invalid_params', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Pages

async function readUnreadPage(
  ctx: HostContext,
  agent: Principal,
  channelId: string | undefined,
  cursor: string | undefined,
  limit: number,
): Promise<ReadOutcome<PageResult>> {
  requireAgent(agent);
  const db = ctx.store.db;
  const channelIds = await readableChannels(db, agent, channelId);
  const queue = await findQueue(db, agent.id);
  // The generation is the target: a cursor from before a queue reset is stale.
  const binding: CursorBinding = {
    caller: agent.id,
    filter: canonicalFilter({ tool: 'channel_read', unread: true, channel_id: channelId ?? null }),
    target: `queue:${queue?.generation ?? ''}`,
  };
  const after = cursor === undefined ? 0 : pageKey(ctx, binding, cursor);
  const rows = await unreadCandidates(db, agent.id, channelIds, after, limit + 1);
  return assemblePage(ctx, agent, rows, limit, binding);
}

async function readHistoryPage(
  ctx: HostContext,
  agent: Principal,
  channelId: string | undefined,
  cursor: string | undefined,
  limit: number,
): Promise<ReadOutcome<PageResult>> {
  const db = ctx.store.db;
  const channelIds = await readableChannels(db, agent, channelId);
  const binding: CursorBinding = {
    caller: agent.id,
    filter: canonicalFilter({ tool: 'channel_read', unread: false, channel_id: channelId ?? null }),
    target: 'history',
  };
  const before = cursor === undefined ? undefined : pageKey(ctx, binding, cursor);
  const rows = await historyCandidates(db, channelIds, before, limit + 1);
  return assemblePage(ctx, agent, rows, limit, binding);
}

/** `channel_search` parameters (DESIGN.md §3.1). */
export interface ChannelSearchParams {
  query: string;
  channel_id?: string | undefined;
  cursor?: string | undefined;
  limit?: number | undefined;
}

/**
 * `channel_search`: full-text matches, newest first, in the channels the caller belongs to now
 * (or one of them), in the same page shape and budget as `channel_read`.
 */
export async function channelSearch(
  ctx: HostContext,
  agent: Principal,
  params: ChannelSearchParams,
): Promise<ReadOutcome<PageResult>> {
  if (typeof params.query !== 'string' || params.query.trim() === '') {
    throw new SluiceError('invalid_params', 'query must be a non-empty string');
  }
  if (params.query.length > MAX_QUERY_UNITS) {
    throw new SluiceError('invalid_params', `query must be at most ${MAX_QUERY_UNITS} characters`);
  }
  for (const key of ['channel_id', 'cursor'] as const) {
    const value = params[key];
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw new SluiceError('invalid_params', `${key} must be a non-empty string`);
    }
  }
  validateLimit(params.limit);
  const limit = params.limit ?? DEFAULT_PAGE_LIMIT;
  const db = ctx.store.db;
  const channelIds = await readableChannels(db, agent, params.channel_id);
  const binding: CursorBinding = {
    caller: agent.id,
    filter: canonicalFilter({
      tool: 'channel_search',
      query: params.query,
      channel_id: params.channel_id ?? null,
    }),
    target: 'search',
  };
  const before = params.cursor === undefined ? undefined : pageKey(ctx, binding, params.cursor);
  const seqs = await ctx.store.searchIndex.search(db, {
    query: params.query,
    channelIds,
    ...(before !== undefined ? { beforeSeq: before } : {}),
    limit: limit + 1,
  });
  const rows = await rowsBySeq(db, seqs);
  return assemblePage(ctx, agent, rows, limit, binding);
}

/** The channels a page may draw from: the one named (if the caller is a member), else all of theirs. */
async function readableChannels(db: Db, agent: Principal, channelId: string | undefined): Promise<string[]> {
  if (channelId === undefined) return listActiveChannelIds(db, agent.id);
  await requireMember(db, channelId, agent.id);
  return [channelId];
}

function pageKey(ctx: HostContext, binding: CursorBinding, cursor: string): number {
  const payload = decodeCursor(ctx.cursorSecret, binding, cursor) as Partial<PagePayload>;
  if (!Number.isSafeInteger(payload.k) || (payload.k as number) < 0) {
    throw new SluiceError('invalid_cursor', 'invalid cursor: no position in it');
  }
  return payload.k as number;
}

/**
 * The largest prefix of the first `limit` candidates that fits the tool budget, with a cursor
 * right after the last one returned. An oversized first candidate yields a `readContent` locator
 * and a cursor past it (I5). Whatever is returned whole is recorded in the open turn, if any.
 */
async function assemblePage(
  ctx: HostContext,
  agent: Principal,
  rows: readonly Candidate[],
  limit: number,
  binding: CursorBinding,
): Promise<ReadOutcome<PageResult>> {
  const budget = ctx.limits.toolOutputUnits;
  const fetched = rows.slice(0, limit);
  const more = rows.length > limit;
  const projections = await loadProjections(
    ctx.store.db,
    fetched.map((c) => c.row),
  );
  const cursorAfter = (index: number): string | null =>
    index + 1 < fetched.length || more
      ? encodeCursor(ctx.cursorSecret, binding, {
          k: (fetched[index] as Candidate).key,
        } satisfies PagePayload)
      : null;
  const restFor = (count: number, locator: 'full' | 'id-only') => {
    if (count > 0 || fetched.length === 0) {
      return {
        nextCursor: count > 0 ? cursorAfter(count - 1) : null,
        omitted: fetched.length - count,
        outputLimit: budget,
      };
    }
    const first = (fetched[0] as Candidate).row;
    const readContent =
      locator === 'full' ? { channel_id: first.channel_id, message_id: first.id } : { message_id: first.id };
    return { nextCursor: cursorAfter(0), omitted: fetched.length, outputLimit: budget, readContent };
  };
  let fit = fitJsonPage({
    arrayKey: 'messages',
    items: projections,
    budgets: toolBudgets(ctx),
    rest: (count) => restFor(count, 'full'),
  });
  // Only ids thousands of characters long (never generated by Sluice) get here: a locator that
  // alone breaks the byte cap is bounded by units alone; one over the unit budget keeps just the
  // message id; if even that cannot be shown, the cursor still moves past it (I5).
  if (fit.count === 0 && fit.text.length > budget) {
    fit = { ...fit, text: JSON.stringify({ messages: [], ...restFor(0, 'id-only') }) };
    if (fit.text.length > budget) {
      const { readContent: _unshowable, ...rest } = restFor(0, 'id-only');
      fit = { ...fit, text: JSON.stringify({ messages: [], ...rest }) };
    }
  }
  if (fit.text.length > budget || (fit.count > 0 && !fitsToolOutput(ctx, fit.text))) {
    throw new SluiceError('too_large', 'the page does not fit the output limit');
  }
  const reads: CoverageRead[] = [];
  for (let i = 0; i < fit.count; i++) {
    const text = fit.serialized[i] as string;
    reads.push({
      messageSeq: Number((fetched[i] as Candidate).row.seq),
      sha256: sha256Hex(text),
      offset: 0,
      end: text.length,
      total: text.length,
    });
  }
  return {
    text: fit.text,
    value: JSON.parse(fit.text) as PageResult,
    receipt: await offerReads(ctx, agent, fit.text, reads),
  };
}

// ---------------------------------------------------------------------------------------------
// One message: whole, or fragments of its projection text

async function readMessage(
  ctx: HostContext,
  agent: Principal,
  params: ChannelReadParams,
): Promise<ReadOutcome<PageResult | FragmentResult>> {
  const budget = ctx.limits.toolOutputUnits;
  const row = await getMessageRow(ctx, agent, params.message_id as string);
  if (params.channel_id !== undefined && params.channel_id !== row.channel_id) {
    throw new SluiceError('not_found', 'no such message in that channel');
  }
  const [projection] = await loadProjections(ctx.store.db, [row]);
  const text = projectionText(projection as MessageProjection);
  const sha256 = sha256Hex(text);
  const seq = Number(row.seq);
  // The content cursor is bound to this exact projection: an edit changes the hash and the target.
  const binding: CursorBinding = {
    caller: agent.id,
    filter: 'channel_read.content',
    target: JSON.stringify([row.id, sha256]),
  };
  if (params.content_cursor === undefined) {
    const whole: PageResult = {
      messages: [projection as MessageProjection],
      nextCursor: null,
      omitted: 0,
      outputLimit: budget,
    };
    const wholeText = JSON.stringify(whole);
    if (fitsToolOutput(ctx, wholeText)) {
      const receipt = await offerReads(ctx, agent, wholeText, [
        { messageSeq: seq, sha256, offset: 0, end: text.length, total: text.length },
      ]);
      return { text: wholeText, value: whole, receipt };
    }
  }
  const offset = params.content_cursor === undefined ? 0 : contentOffset(ctx, binding, params.content_cursor);
  const fragment = fragmentWithinBytes(ctx, budget, (unitBudget) =>
    fragmentAt({
      messageId: row.id,
      text,
      offset,
      budget: unitBudget,
      makeCursor: (end) => encodeCursor(ctx.cursorSecret, binding, { o: end } satisfies ContentPayload),
    }),
  );
  const fragmentText = JSON.stringify(fragment);
  const receipt = await offerReads(ctx, agent, fragmentText, [
    { messageSeq: seq, sha256, offset, end: offset + fragment.fragment.length, total: text.length },
  ]);
  return { text: fragmentText, value: fragment, receipt };
}

/**
 * Fragments are cut by UTF-16 units; when the UTF-8 cap is also set, shrink the unit budget in
 * proportion to the byte excess until the serialized fragment fits it too.
 */
function fragmentWithinBytes(
  ctx: HostContext,
  budget: number,
  cut: (unitBudget: number) => FragmentResult,
): FragmentResult {
  const bytes = ctx.limits.toolOutputBytes;
  let unitBudget = budget;
  for (;;) {
    let fragment: FragmentResult;
    try {
      fragment = cut(unitBudget);
    } catch (err) {
      // Only ids thousands of characters long (never generated by Sluice) leave no room under
      // the byte cap: fall back to the unit budget alone rather than stall the reader (I5).
      if (unitBudget < budget && isSluiceError(err) && err.code === 'too_large') return cut(budget);
      throw err;
    }
    const size = bytes > 0 ? utf8Length(JSON.stringify(fragment)) : 0;
    if (size <= bytes) return fragment;
    unitBudget = Math.min(unitBudget - 1, Math.floor((unitBudget * bytes) / size));
  }
}

function contentOffset(ctx: HostContext, binding: CursorBinding, token: string): number {
  let payload: Partial<ContentPayload>;
  try {
    payload = decodeCursor(ctx.cursorSecret, binding, token) as Partial<ContentPayload>;
  } catch (err) {
    if (isSluiceError(err) && err.code === 'invalid_cursor') {
      throw new SluiceError(
        'invalid_cursor',
        `${err.message}; if the message changed since, read it again from message_id without content_cursor`,
      );
    }
    throw err;
  }
  if (!Number.isSafeInteger(payload.o))
    throw new SluiceError('invalid_cursor', 'invalid content cursor: no offset');
  return payload.o as number;
}

// ---------------------------------------------------------------------------------------------
// Queries: keyset reads whose cost follows the page, not the history

/** Pending inbox entries after `afterPosition`, FIFO, in the given channels, with their messages. */
async function unreadCandidates(
  db: Db,
  agentId: string,
  channelIds: readonly string[],
  afterPosition: number,
  limit: number,
): Promise<Candidate[]> {
  if (channelIds.length === 0) return [];
  const rows = await db
    .selectFrom('inbox')
    .innerJoin('messages', 'messages.seq', 'inbox.message_seq')
    .selectAll('messages')
    .select('inbox.position as position')
    .where('inbox.agent_id', '=', agentId)
    .where('inbox.position', '>', afterPosition)
    .where('inbox.state', 'in', PENDING_STATES)
    .where('inbox.channel_id', 'in', channelIds)
    .where('messages.deleted_at', 'is', null)
    .orderBy('inbox.position', 'asc')
    .limit(limit)
    .execute();
  return rows.map(({ position, ...row }) => ({ key: Number(position), row }));
}

/** Messages before `beforeSeq`, newest first, in the given channels. */
async function historyCandidates(
  db: Db,
  channelIds: readonly string[],
  beforeSeq: number | undefined,
  limit: number,
): Promise<Candidate[]> {
  if (channelIds.length === 0) return [];
  let q = db.selectFrom('messages').selectAll().where('messages.deleted_at', 'is', null);
  q =
    channelIds.length === 1
      ? q.where('channel_id', '=', channelIds[0] as string)
      : q.where('channel_id', 'in', channelIds);
  if (beforeSeq !== undefined) q = q.where('seq', '<', beforeSeq);
  const rows = await q.orderBy('seq', 'desc').limit(limit).execute();
  return rows.map((row) => ({ key: Number(row.seq), row }));
}

async function rowsBySeq(db: Db, seqs: readonly number[]): Promise<Candidate[]> {
  if (seqs.length === 0) return [];
  const rows = await db.selectFrom('messages').selectAll().where('seq', 'in', seqs).execute();
  const bySeq = new Map(rows.map((r) => [Number(r.seq), r]));
  return seqs.flatMap((seq) => {
    const row = bySeq.get(seq);
    return row ? [{ key: seq, row }] : [];
  });
}

// ---------------------------------------------------------------------------------------------
// Errors within budget

/** The error result text `{"error":{"code","message"}}`, its message cut so the whole fits `budget`. */
export function errorText(code: SluiceErrorCode | string, message: string, budget: number): string {
  const full = JSON.stringify({ error: { code, message } });
  if (full.length <= budget) return full;
  // Halve until it fits; JSON escaping can grow a unit into six, so measure the real text.
  let keep = Math.max(0, Math.min(message.length, budget));
  for (;;) {
    let end = keep;
    const last = message.charCodeAt(end - 1);
    if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
    const text = JSON.stringify({ error: { code, message: `${message.slice(0, end)}…` } });
    if (text.length <= budget || end === 0) return text;
    keep = Math.floor(end / 2);
  }
}

/** Error text for anything a read throws: user errors keep their code, bugs become `internal`. */
export function errorTextFor(err: unknown, budget: number): { code: string; text: string } {
  if (isSluiceError(err)) return { code: err.code, text: errorText(err.code, err.message, budget) };
  return {
    code: 'internal',
    text: errorText('internal', 'internal error while reading; the failure is logged', budget),
  };
}

// ---------------------------------------------------------------------------------------------
// Inbox status

/** `inbox_status`: counts from the maintained counters and the oldest pending message you can read. */
export interface InboxStatus {
  agent: string;
  settlement: 'explicit' | 'turn';
  pending: number;
  returned: number;
  oldest: { message_id: string; channel_id: string; from: string; created_at: string } | null;
  openTurn: boolean;
}

/**
 * A tiny summary for a model: constant work (counters plus one index probe). `pending` counts every
 * pending entry, including ones from channels the agent left (they stay pending, unreadable, I6);
 * `oldest` is the oldest one it can read now.
 */
export async function inboxStatus(ctx: HostContext, agent: Principal): Promise<ReadOutcome<InboxStatus>> {
  requireAgent(agent);
  const db = ctx.store.db;
  const queue = await findQueue(db, agent.id);
  const channelIds = await listActiveChannelIds(db, agent.id);
  const [head] = await unreadCandidates(db, agent.id, channelIds, 0, 1);
  let oldest: InboxStatus['oldest'] = null;
  if (head) {
    const [projection] = await loadProjections(db, [head.row]);
    oldest = {
      message_id: head.row.id,
      channel_id: head.row.channel_id,
      from: projection?.author.name ?? 'unknown',
      created_at: head.row.created_at,
    };
  }
  const value: InboxStatus = {
    agent: agent.name,
    settlement: agent.settlement,
    pending: (queue?.waiting ?? 0) + (queue?.returned ?? 0),
    returned: queue?.returned ?? 0,
    oldest,
    openTurn: (await openTurnOf(db, agent.id)) !== undefined,
  };
  let text = JSON.stringify(value);
  // Hostile ids could make the locator alone too large; the counts still fit.
  if (!fitsToolOutput(ctx, text)) text = JSON.stringify({ ...value, oldest: null });
  return { text, value: JSON.parse(text) as InboxStatus };
}
