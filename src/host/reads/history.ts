import { type Bounded, boundedJson, fitBoundedList } from '../../core/bounded.js';
import { type CursorBinding, canonicalFilter } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import { cutUtf8 } from '../../core/preview.js';
import { sliceWhole } from '../../core/text.js';
import type { HistoryMessage, HistoryPage, MessageReadResult, ReplyExcerpt } from '../../core/wire/index.js';
import { findMessageById, listChannelHistory, type MessageRow } from '../../store/ops/messages.js';
import { findCurrentMemberIds, findReceiptRows, findReplyHeads } from '../../store/ops/presentation.js';
import { findPrincipalsByIds } from '../../store/ops/principals.js';
import type { InboxState } from '../../store/schema.js';
import type { Db } from '../../store/store.js';
import { getChannel } from '../channels/channels.js';
import { listReadMarks } from '../channels/read-marks.js';
import { PREVIEW_BYTES, renderBodyPart } from '../device/queue-pages.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { getMessageRow } from '../messages/messages.js';
import { type AttachmentRef, parseJsonArray } from '../messages/projection.js';
import { BODY_PART_CURSOR, HISTORY_CURSOR, issueCursor, readCursor } from './cursors.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { HistoryMessage, HistoryPage, MessageReadResult, ReplyExcerpt };

export const MAX_HISTORY_PAGE = 200;
export const DEFAULT_HISTORY_PAGE = 40;
/** A row bigger than this is sent compact (preview, no actions); its body comes via message.read. */
export const FULL_ROW_BYTES = 64 * 1024;
const MAX_RECEIPTS = 16;
const MAX_READ_MARKS = 64;
/** A reply's quote of its parent: the parent's first line, at most this many UTF-16 units. */
export const REPLY_EXCERPT_UNITS = 160;
/** Characters of a parent's body read to find that line (the rest of the body is never loaded). */
const REPLY_HEAD_CHARS = 400;

export interface HistoryParams {
  channelId: string;
  cursor?: string | undefined;
  size?: number | undefined;
}

/**
 * A page of a channel's history, newest first, whose complete JSON text fits `budgetBytes`.
 * Large messages travel as previews (`truncated: true`) and are read in parts with
 * {@link readMessageBody}; the cursor is bound to the caller and the channel (I6).
 */
export async function readChannelHistory(
  ctx: HostContext,
  actor: Principal,
  params: HistoryParams,
  budgetBytes: number,
): Promise<Bounded<HistoryPage>> {
  const size = params.size ?? DEFAULT_HISTORY_PAGE;
  if (!Number.isInteger(size) || size < 1 || size > MAX_HISTORY_PAGE) {
    throw new SluiceError('invalid_params', `size must be an integer from 1 to ${MAX_HISTORY_PAGE}`);
  }
  const channel = await getChannel(ctx, actor, params.channelId);
  const binding: CursorBinding = { caller: actor.id, filter: 'channel.history', target: channel.id };
  let beforeSeq: number | undefined;
  if (params.cursor !== undefined) {
    beforeSeq = readCursor(ctx, HISTORY_CURSOR, binding, params.cursor).b;
  }
  const db = ctx.store.db;
  const fetched = await listChannelHistory(db, channel.id, { beforeSeq, limit: size + 1 });
  const rows = fetched.slice(0, size);
  const more = fetched.length > size;
  const messages = await presentMessages(db, rows);
  const marks = await listReadMarks(db, channel.id, MAX_READ_MARKS);
  const names = await principalNames(
    db,
    marks.map((m) => m.principalId),
  );
  const readMarks = marks.map((m) => ({
    principal: names.get(m.principalId)?.name ?? 'unknown',
    lastReadSeq: m.lastReadSeq,
    updatedAt: m.updatedAt,
  }));
  // The page around its messages; the largest prefix of them that fits is put in (core/bounded.ts).
  const page = (_first: number, end: number): HistoryPage => {
    const hasMore = end < messages.length || more;
    const last = messages[end - 1];
    return {
      status: 'page',
      channelId: channel.id,
      messages: [],
      readMarks,
      hasMore,
      nextCursor: hasMore && last ? issueCursor(ctx, HISTORY_CURSOR, binding, { b: last.seq }) : null,
    };
  };
  const { text, value } = fitBoundedList({
    rows: messages,
    key: 'messages',
    budgets: { utf8: budgetBytes },
    page,
    // Progress (I5): an oversized newest message still comes, compact; so does any huge row.
    oversized: {
      compact: compactMessage,
      compactOverBytes: FULL_ROW_BYTES,
      refusal: `the reply budget (${budgetBytes} bytes) cannot hold a single message`,
    },
  });
  return { text, value };
}

/** The same message with a preview instead of the body, a cut subject and no actions. */
export function compactMessage(m: HistoryMessage): HistoryMessage {
  const { actions: _actions, ...rest } = m;
  return {
    ...rest,
    subject: m.subject === null ? null : cutUtf8(m.subject, PREVIEW_BYTES).text,
    body: cutUtf8(m.body, PREVIEW_BYTES).text,
    truncated: true,
    attachments: m.attachments.slice(0, 32),
  };
}

async function principalNames(db: Db, ids: readonly string[]) {
  const rows = await findPrincipalsByIds(db, [...new Set(ids)]);
  return new Map(rows.map((p) => [p.id, p]));
}

/** Presentation rows for messages, with authors and delivery receipts loaded in batches. */
export async function presentMessages(db: Db, rows: readonly MessageRow[]): Promise<HistoryMessage[]> {
  const receipts = await receiptsBySeq(
    db,
    rows.map((r) => Number(r.seq)),
  );
  const heads = await findReplyHeads(
    db,
    [...new Set(rows.flatMap((r) => (r.reply_to ? [r.reply_to] : [])))],
    REPLY_HEAD_CHARS,
  );
  const authors = await principalNames(db, [
    ...rows.map((r) => r.author_id),
    ...heads.map((h) => h.author_id),
  ]);
  const authorOf = (id: string) => {
    const author = authors.get(id);
    return author
      ? { id: author.id, name: author.name, kind: author.kind }
      : { id, name: 'unknown', kind: 'unknown' as const };
  };
  const replies = new Map(
    heads.map((h) => [
      h.id,
      {
        messageId: h.id,
        seq: h.seq,
        author: authorOf(h.author_id),
        excerpt: h.deleted_at === null ? excerptLine(h.head) : '',
        deleted: h.deleted_at !== null,
      },
    ]),
  );
  return rows.map((row) => {
    const all = receipts.get(Number(row.seq)) ?? [];
    return {
      messageId: row.id,
      seq: Number(row.seq),
      channelId: row.channel_id,
      author: authorOf(row.author_id),
      createdAt: row.created_at,
      subject: row.subject,
      replyTo: row.reply_to,
      replyExcerpt: row.reply_to ? (replies.get(row.reply_to) ?? null) : null,
      body: row.body,
      truncated: false,
      bodyBytes: Number(row.body_bytes),
      attachments: parseJsonArray(row.attachments) as AttachmentRef[],
      actions: parseJsonArray(row.actions),
      revision: Number(row.revision),
      editedAt: row.edited_at,
      receipts: all.slice(0, MAX_RECEIPTS),
      receiptCount: all.length,
    };
  });
}

/**
 * The first non-empty line of a body's head, cut on a code point to {@link REPLY_EXCERPT_UNITS},
 * with `…` when anything of the body is left out.
 */
export function excerptLine(head: string): string {
  const start = head.search(/\S/);
  if (start < 0) return '';
  const rest = head.slice(start);
  const lineEnd = rest.indexOf('\n');
  const line = (lineEnd < 0 ? rest : rest.slice(0, lineEnd)).trimEnd();
  const cut = sliceWhole(line, REPLY_EXCERPT_UNITS);
  const more =
    cut.length < line.length ||
    (lineEnd >= 0 && rest.slice(lineEnd).trim() !== '') ||
    [...head].length >= REPLY_HEAD_CHARS;
  return more ? `${cut}…` : line;
}

/** Delivery receipts by message seq: where each addressed agent's copy stands, agents by name. */
async function receiptsBySeq(db: Db, seqs: readonly number[]) {
  const bySeq = new Map<number, { agent: string; state: InboxState }[]>();
  for (const r of await findReceiptRows(db, seqs)) {
    const list = bySeq.get(Number(r.message_seq)) ?? [];
    list.push({ agent: r.name, state: r.state });
    bySeq.set(Number(r.message_seq), list);
  }
  return bySeq;
}

/** One message's receipts as a live `channel.receipts` notification carries them (≤ 16 and a count). */
export async function presentReceipts(
  db: Db,
  messageId: string,
): Promise<{
  messageId: string;
  seq: number;
  receipts: { agent: string; state: InboxState }[];
  receiptCount: number;
} | null> {
  const row = await findMessageById(db, messageId);
  if (!row || row.deleted_at !== null) return null;
  const all = (await receiptsBySeq(db, [Number(row.seq)])).get(Number(row.seq)) ?? [];
  return {
    messageId: row.id,
    seq: Number(row.seq),
    receipts: all.slice(0, MAX_RECEIPTS),
    receiptCount: all.length,
  };
}

/**
 * A channel event's message as live subscribers see it: the presentation record, compact when it
 * is over `fullLimit` bytes; null when the message is gone.
 */
export async function presentForLive(
  db: Db,
  messageId: string,
  fullLimit: number,
): Promise<HistoryMessage | null> {
  const row = await findMessageById(db, messageId);
  if (!row || row.deleted_at !== null) return null;
  const [message] = await presentMessages(db, [row]);
  if (!message) return null;
  return utf8Length(JSON.stringify(message)) <= fullLimit ? message : compactMessage(message);
}

/** The channel's current members (I6 recheck for live pushes, one query for all subscribers). */
export async function currentMemberIds(db: Db, channelId: string): Promise<Set<string>> {
  return new Set(await findCurrentMemberIds(db, channelId));
}

/**
 * The exact stored body of a message in a channel the actor belongs to, in parts whose complete
 * result text fits `budgetBytes`. A cursor issued before an edit gives `state-changed`.
 */
export async function readMessageBody(
  ctx: HostContext,
  actor: Principal,
  params: { messageId: string; cursor?: string | undefined },
  budgetBytes: number,
): Promise<Bounded<MessageReadResult>> {
  const row = await getMessageRow(ctx, actor, params.messageId);
  const revision = Number(row.revision);
  const binding: CursorBinding = {
    caller: actor.id,
    filter: canonicalFilter({ method: 'message.read' }),
    target: row.id,
  };
  let offset = 0;
  if (params.cursor !== undefined) {
    const raw = readCursor(ctx, BODY_PART_CURSOR, binding, params.cursor);
    if (raw.r !== revision) {
      return boundedJson<MessageReadResult>({ status: 'state-changed', messageId: row.id, revision });
    }
    offset = raw.o;
  }
  const bodyBytes = utf8Length(row.body);
  return renderBodyPart<MessageReadResult>({
    body: row.body,
    offset,
    budgetBytes,
    path: ['part', 'text'],
    // The cursor names the next part.
    result: (part, next) => ({
      status: 'body',
      messageId: row.id,
      revision,
      bodyBytes,
      part: { offset, text: part },
      nextCursor:
        next === null ? null : issueCursor(ctx, BODY_PART_CURSOR, binding, { o: next, r: revision }),
    }),
  });
}
