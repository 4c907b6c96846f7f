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
  const ordered: MessageProjection = {
    channel_id: projection.channel_id,
    message_id: projection.message_id,
    author: projection.author,
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
