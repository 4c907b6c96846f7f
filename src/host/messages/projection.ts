import { type MessageOrigin, originOf } from '../../core/provenance.js';
import type { AttachmentRef } from '../../core/wire/index.js';
import type { MessageRow } from '../../store/ops/messages.js';
import type { PrincipalKind } from '../../store/schema.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { AttachmentRef };

/** What a model receives for one message: complete body, nothing from the human presentation record. */
export interface MessageProjection {
  channel_id: string;
  message_id: string;
  author: { id: string; name: string; kind: PrincipalKind };
  /** How it came in when its author did not send it directly (`telegram`: relayed by the bridge). */
  via?: MessageOrigin;
  created_at: string;
  subject?: string;
  body: string;
  reply_to?: { message_id: string; author: string; excerpt: string };
  attachments: AttachmentRef[];
  actions: unknown[];
}

export interface ProjectionAuthor {
  id: string;
  name: string;
  kind: PrincipalKind;
}

export interface ReplyContext {
  message_id: string;
  author: string;
  excerpt: string;
}

const EXCERPT_UNITS = 200;

/** A short excerpt of a parent message, cut on a code point. */
export function excerptOf(body: string): string {
  if (body.length <= EXCERPT_UNITS) return body;
  let end = EXCERPT_UNITS;
  const code = body.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${body.slice(0, end)}…`;
}

/** Builds the projection with a fixed key order, so its JSON text (and SHA-256) is stable. */
export function projectMessage(
  row: MessageRow,
  author: ProjectionAuthor,
  replyTo: ReplyContext | undefined,
): MessageProjection {
  const projection: MessageProjection = {
    channel_id: row.channel_id,
    message_id: row.id,
    author: { id: author.id, name: author.name, kind: author.kind },
    created_at: row.created_at,
    body: row.body,
    attachments: parseJsonArray(row.attachments) as AttachmentRef[],
    actions: parseJsonArray(row.actions),
  };
  const via = originOf(row.origin);
  const ordered: MessageProjection = {
    channel_id: projection.channel_id,
    message_id: projection.message_id,
    author: projection.author,
    ...(via !== undefined ? { via } : {}),
    created_at: projection.created_at,
    ...(row.subject !== null ? { subject: row.subject } : {}),
    body: projection.body,
    ...(replyTo ? { reply_to: replyTo } : {}),
    attachments: projection.attachments,
    actions: projection.actions,
  };
  return ordered;
}

/** A stored JSON array column (attachments, actions); anything malformed reads as empty. */
export function parseJsonArray(text: string): unknown[] {
  try {
    const value = JSON.parse(text);
    return Array.isArray(value) ? value : [];
  } catch {
    return [];
  }
}

/** The projection's JSON text: what fragments slice and what coverage hashes. */
export function projectionText(projection: MessageProjection): string {
  return JSON.stringify(projection);
}

/** The stored caption, or a short note naming the attachments when there is none. */
export function captionFor(body: string, attachments: readonly AttachmentRef[]): string {
  if (body.trim() !== '' || attachments.length === 0) return body;
  const names = attachments.map((a) => a.name).join(', ');
  if (attachments.length === 1) {
    const one = attachments[0] as AttachmentRef;
    return one.mime.startsWith('image/') ? `(sent an image: ${one.name})` : `(sent a file: ${one.name})`;
  }
  const allImages = attachments.every((a) => a.mime.startsWith('image/'));
  return `(sent ${attachments.length} ${allImages ? 'images' : 'files'}: ${names})`;
}
