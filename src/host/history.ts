import { type CursorBinding, canonicalFilter, decodeCursor, encodeCursor } from '../core/cursor.js';
import { SluiceError } from '../core/errors.js';
import { fitLargestPrefix } from '../core/fit.js';
import { utf8Length } from '../core/measure.js';
import { cutUtf8 } from '../core/preview.js';
import { findMessageById, type MessageRow } from '../store/ops/messages.js';
import { findPrincipalsByIds } from '../store/ops/principals.js';
import type { InboxState, PrincipalKind } from '../store/schema.js';
import type { Db } from '../store/store.js';
import { getChannel } from './channels.js';
import type { HostContext } from './context.js';
import { getMessageRow } from './messages.js';
import type { Principal } from './principals.js';
import { type AttachmentRef, parseJsonArray } from './projection.js';
import { PREVIEW_BYTES, type Rendered, renderBodyPart } from './queue-pages.js';
import { listReadMarks } from './read-marks.js';

export const MAX_HISTORY_PAGE = 200;
export const DEFAULT_HISTORY_PAGE = 40;
/** A row bigger than this is sent compact (preview, no actions); its body comes via message.read. */
export const FULL_ROW_BYTES = 64 * 1024;
const MAX_RECEIPTS = 16;
const MAX_READ_MARKS = 64;

/** One message as people see it: the presentation record, with receipts and revisions. */
export interface HistoryMessage {
  messageId: string;
  seq: number;
  channelId: string;
  author: { id: string; name: string; kind: PrincipalKind | 'unknown' };
  createdAt: string;
  subject: string | null;
  replyTo: string | null;
  body: string;
  /** True when `body` is a preview: read the whole text with message.read. */
  truncated: boolean;
  bodyBytes: number;
  attachments: AttachmentRef[];
  actions?: unknown[];
  revision: number;
  editedAt: string | null;
  /** Delivery receipts: where each addressed agent's copy stands (≤ 16; see receiptCount). */
  receipts: { agent: string; state: InboxState }[];
  receiptCount: number;
}

export interface HistoryPage {
  status: 'page';
  channelId: string;
  messages: HistoryMessage[];
  readMarks: { principal: string; lastReadSeq: number; updatedAt: string }[];
  hasMore: boolean;
  nextCursor: string | null;
}

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
): Promise<Rendered<HistoryPage>> {
  const size = params.size ?? DEFAULT_HISTORY_PAGE;
  if (!Number.isInteger(size) || size < 1 || size > MAX_HISTORY_PAGE) {
    throw new SluiceError('invalid_params', `size must be an integer from 1 to ${MAX_HISTORY_PAGE}`);
  }
  const channel = await getChannel(ctx, actor, params.channelId);
  const binding: CursorBinding = { caller: actor.id, filter: 'channel.history', target: channel.id };
  let beforeSeq: number | undefined;
  if (params.cursor !== undefined) {
    const raw = decodeCursor(ctx.cursorSecret, binding, params.cursor);
    if (typeof raw.b !== 'number' || !Number.isSafeInteger(raw.b)) {
      throw new SluiceError('invalid_cursor', 'invalid cursor: unexpected payload');
    }
    beforeSeq = raw.b;
  }
  const db = ctx.store.db;
  let q = db
    .selectFrom('messages')
    .selectAll()
    .where('channel_id', '=', channel.id)
    .where('deleted_at', 'is', null);
  if (beforeSeq !== undefined) q = q.where('seq', '<', beforeSeq);
  const fetched = await q
    .orderBy('seq', 'desc')
    .limit(size + 1)
    .execute();
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
  const serialized = messages.map((m) => {
    const full = JSON.stringify(m);
    return utf8Length(full) <= FULL_ROW_BYTES ? full : JSON.stringify(compactMessage(m));
  });
  const head = `{"status":"page","channelId":${JSON.stringify(channel.id)},"messages":[`;
  const frame = (count: number) => {
    const hasMore = count < messages.length || more;
    const last = messages[count - 1];
    const nextCursor = hasMore && last ? encodeCursor(ctx.cursorSecret, binding, { b: last.seq }) : null;
    return {
      before: head,
      after: `],"readMarks":${JSON.stringify(readMarks)},"hasMore":${hasMore},"nextCursor":${JSON.stringify(nextCursor)}}`,
    };
  };
  let { count, text } = fitLargestPrefix({ items: serialized, budgets: { utf8: budgetBytes }, frame });
  if (count === 0 && messages.length > 0) {
    // Progress (I5): an oversized newest message still comes, compact.
    const f = frame(1);
    text = f.before + JSON.stringify(compactMessage(messages[0] as HistoryMessage)) + f.after;
    count = 1;
    if (utf8Length(text) > budgetBytes) {
      throw new SluiceError(
        'too_large',
        `the reply budget (${budgetBytes} bytes) cannot hold a single message`,
      );
    }
  }
  return { result: JSON.parse(text) as HistoryPage, text };
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
  const seqs = rows.map((r) => Number(r.seq));
  const receipts =
    seqs.length === 0
      ? []
      : await db
          .selectFrom('inbox')
          .innerJoin('principals', 'principals.id', 'inbox.agent_id')
          .select(['inbox.message_seq', 'inbox.state', 'principals.name'])
          .where('inbox.message_seq', 'in', seqs)
          .orderBy('principals.name')
          .execute();
  const bySeq = new Map<number, { agent: string; state: InboxState }[]>();
  for (const r of receipts) {
    const list = bySeq.get(Number(r.message_seq)) ?? [];
    list.push({ agent: r.name, state: r.state });
    bySeq.set(Number(r.message_seq), list);
  }
  const authors = await principalNames(
    db,
    rows.map((r) => r.author_id),
  );
  return rows.map((row) => {
    const author = authors.get(row.author_id);
    const all = bySeq.get(Number(row.seq)) ?? [];
    return {
      messageId: row.id,
      seq: Number(row.seq),
      channelId: row.channel_id,
      author: author
        ? { id: author.id, name: author.name, kind: author.kind }
        : { id: row.author_id, name: 'unknown', kind: 'unknown' },
      createdAt: row.created_at,
      subject: row.subject,
      replyTo: row.reply_to,
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
  const rows = await db
    .selectFrom('memberships')
    .select('principal_id')
    .where('channel_id', '=', channelId)
    .where('left_at', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.principal_id));
}

export type MessageReadResult =
  | {
      status: 'body';
      messageId: string;
      revision: number;
      bodyBytes: number;
      part: { offset: number; text: string };
      nextCursor: string | null;
    }
  | { status: 'state-changed'; messageId: string; revision: number };

/**
 * The exact stored body of a message in a channel the actor belongs to, in parts whose complete
 * result text fits `budgetBytes`. A cursor issued before an edit gives `state-changed`.
 */
export async function readMessageBody(
  ctx: HostContext,
  actor: Principal,
  params: { messageId: string; cursor?: string | undefined },
  budgetBytes: number,
): Promise<Rendered<MessageReadResult>> {
  const row = await getMessageRow(ctx, actor, params.messageId);
  const revision = Number(row.revision);
  const binding: CursorBinding = {
    caller: actor.id,
    filter: canonicalFilter({ method: 'message.read' }),
    target: row.id,
  };
  let offset = 0;
  if (params.cursor !== undefined) {
    const raw = decodeCursor(ctx.cursorSecret, binding, params.cursor);
    if (typeof raw.o !== 'number' || !Number.isSafeInteger(raw.o) || raw.o < 0 || typeof raw.r !== 'number') {
      throw new SluiceError('invalid_cursor', 'invalid cursor: unexpected payload');
    }
    if (raw.r !== revision) {
      const result: MessageReadResult = { status: 'state-changed', messageId: row.id, revision };
      return { result, text: JSON.stringify(result) };
    }
    offset = raw.o;
  }
  return renderBodyPart({
    body: row.body,
    offset,
    budgetBytes,
    head: `{"status":"body","messageId":${JSON.stringify(row.id)},"revision":${revision},"bodyBytes":${utf8Length(row.body)},"part":{"offset":${offset},"text":`,
    tail: (next) =>
      `},"nextCursor":${JSON.stringify(next === null ? null : encodeCursor(ctx.cursorSecret, binding, { o: next, r: revision }))}}`,
  });
}
