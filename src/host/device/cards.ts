import { utf8Length } from '../../core/measure.js';
import { cutUtf8 } from '../../core/preview.js';
import type { QueueCard } from '../../core/wire/index.js';
import type { CardRow } from '../../store/ops/queue-pages.js';
import { parseJsonArray } from '../messages/projection.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { QueueCard };

/** Device-read limits (DESIGN.md §3.3); each is a setting with the design's default. */
export const PREVIEW_BYTES = 512;
export const SENDER_LABEL_BYTES = 128;
export const MAX_PAGE_SIZE = 200;
export const DEFAULT_PAGE_SIZE = 40;
/** Characters of a body read for its preview: at most 4 bytes each, so never short of PREVIEW_BYTES. */
export const HEAD_CHARS = PREVIEW_BYTES;

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
export function minimalCard(card: QueueCard): QueueCard {
  const { returnedReason: _r, returnedFailure: _f, ...rest } = card;
  return { ...rest, senderLabels: [], preview: '', truncated: true };
}
