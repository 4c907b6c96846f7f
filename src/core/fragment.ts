import { createHash } from 'node:crypto';
import { escapedCostAt, escapedCostBefore } from './budgeted-slice.js';
import { SluiceError } from './errors.js';
import { utf8Length } from './measure.js';
import type { MessageOrigin, SenderRelation } from './provenance.js';

/**
 * One slice of a projection's JSON text, as `channel_read` returns it (DESIGN.md §3.1). Joining
 * the fragments of a chain in order gives the projection text back byte for byte.
 */
export interface FragmentResult {
  message_id: string;
  /** What the message's sender is to the reader (core/provenance.ts); on every fragment. */
  sender?: SenderRelation;
  /** The bridge the message came through (`telegram`), only when it did; on every fragment. */
  via?: MessageOrigin;
  /** SHA-256 of the whole projection text, so a reader can tell the message did not change. */
  sha256: string;
  /** Where this fragment starts, in UTF-16 units of the projection text. */
  offset: number;
  /** Length of the whole projection text in UTF-16 units. */
  total: number;
  fragment: string;
  /** Continues right after this fragment; null once the text is complete. */
  contentCursor: string | null;
  complete: boolean;
  outputLimit: number;
}

/**
 * Hex SHA-256 of the UTF-8 encoding of `text`, so anyone can check it with standard tools.
 * Projection texts come from `JSON.stringify`, which escapes lone surrogates, so the UTF-8
 * encoding of such a text is lossless.
 */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** True when `index` falls between the two halves of a surrogate pair. */
function splitsPair(text: string, index: number): boolean {
  return (
    index > 0 &&
    index < text.length &&
    isHighSurrogate(text.charCodeAt(index - 1)) &&
    isLowSurrogate(text.charCodeAt(index))
  );
}

/**
 * Returns `end` clamped to `[start, text.length]` and moved back by one unit if it would fall
 * between the halves of a surrogate pair, so `text.slice(start, result)` never splits a pair.
 */
export function sliceUtf16Safe(text: string, start: number, end: number): number {
  const clamped = Math.max(start, Math.min(end, text.length));
  return clamped > start && splitsPair(text, clamped) ? clamped - 1 : clamped;
}

/** Options for {@link fragmentAt}. */
export interface FragmentOptions {
  messageId: string;
  /** What the sender is to the reader: carried on each fragment, and counted in its budget. */
  sender?: SenderRelation | undefined;
  /** The bridge it came through, carried beside `sender` on each fragment (counted likewise). */
  via?: MessageOrigin | undefined;
  /** The projection's complete JSON text. */
  text: string;
  /**
   * {@link sha256Hex} of `text`, when the caller already computed it (a reader binds its cursor to
   * it): hashing a large message once per fragment read is the read's largest cost after loading it.
   */
  sha256?: string | undefined;
  /** Where to start, in UTF-16 units; must be a code point boundary. */
  offset: number;
  /** Ceiling for `JSON.stringify(result).length` (UTF-16 units). */
  budget: number;
  /** Ceiling for the UTF-8 bytes of `JSON.stringify(result)`, when a byte cap applies too. */
  byteBudget?: number | undefined;
  /** Content cursor for a continuation at `end`; called only when `end < total`. */
  makeCursor: (end: number) => string;
}

/**
 * Largest slice of `text` starting at `offset` (UTF-16 units) such that the serialized
 * FragmentResult is <= `budget` UTF-16 units (and <= `byteBudget` UTF-8 bytes when given). Never splits a surrogate pair and always makes
 * progress (at least one code point), or throws `too_large` when not even one code point fits.
 * An offset that is not an integer in [0, total] or falls inside a pair is `invalid_cursor`.
 */
export function fragmentAt(opts: FragmentOptions): FragmentResult {
  const { messageId, text, offset, budget, makeCursor } = opts;
  const total = text.length;
  if (!Number.isInteger(offset) || offset < 0 || offset > total || splitsPair(text, offset)) {
    throw new SluiceError('invalid_cursor', 'content cursor points outside the message text');
  }
  const base: FragmentResult = {
    message_id: messageId,
    ...(opts.sender !== undefined ? { sender: opts.sender } : {}),
    ...(opts.via !== undefined ? { via: opts.via } : {}),
    sha256: opts.sha256 ?? sha256Hex(text),
    offset,
    total,
    fragment: '',
    contentCursor: null,
    complete: true,
    outputLimit: budget,
  };
  const byteBudget = opts.byteBudget ?? Number.POSITIVE_INFINITY;
  const overheadFor = (cursor: string | null) => {
    const serialized = JSON.stringify({ ...base, contentCursor: cursor, complete: cursor === null });
    return { utf16: serialized.length, utf8: utf8Length(serialized) };
  };

  // One forward pass, stopping as soon as neither shape (complete, or partial with the shortest
  // possible cursor) could hold more, so the cost is bounded by the budget, not the text.
  const complete = overheadFor(null);
  const partial = overheadFor('');
  const roomComplete = { utf16: budget - complete.utf16, utf8: byteBudget - complete.utf8 };
  const roomPartial = { utf16: budget - partial.utf16, utf8: byteBudget - partial.utf8 };
  const room = {
    utf16: Math.max(roomComplete.utf16, roomPartial.utf16),
    utf8: Math.max(roomComplete.utf8, roomPartial.utf8),
  };
  const used = { utf16: 0, utf8: 0 };
  let index = offset;
  let end = offset;
  const usedAtEnd = { utf16: 0, utf8: 0 };
  while (index < total) {
    const cost = escapedCostAt(text, index);
    if (used.utf16 + cost.utf16 > room.utf16 || used.utf8 + cost.utf8 > room.utf8) break;
    used.utf16 += cost.utf16;
    used.utf8 += cost.utf8;
    index += cost.step;
    if (used.utf16 <= roomPartial.utf16 && used.utf8 <= roomPartial.utf8) {
      end = index;
      usedAtEnd.utf16 = used.utf16;
      usedAtEnd.utf8 = used.utf8;
    }
  }
  if (index === total && used.utf16 <= roomComplete.utf16 && used.utf8 <= roomComplete.utf8) {
    return { ...base, fragment: text.slice(offset), complete: true };
  }

  // Partial: the cursor for the chosen end takes room too. Step back while it does not fit, then
  // forward while a longer slice (whose cursor may be shorter) still does.
  const fitsWith = (candidateEnd: number, escaped: { utf16: number; utf8: number }) => {
    const overhead = overheadFor(makeCursor(candidateEnd));
    return escaped.utf16 <= budget - overhead.utf16 && escaped.utf8 <= byteBudget - overhead.utf8;
  };
  while (end > offset && !fitsWith(end, usedAtEnd)) {
    const cost = escapedCostBefore(text, end);
    end -= cost.step;
    usedAtEnd.utf16 -= cost.utf16;
    usedAtEnd.utf8 -= cost.utf8;
  }
  if (end === offset) {
    throw new SluiceError('too_large', 'not even one character of the message fits in the output limit', {
      budget,
    });
  }
  while (end < total) {
    const cost = escapedCostAt(text, end);
    const next = end + cost.step;
    const grown = { utf16: usedAtEnd.utf16 + cost.utf16, utf8: usedAtEnd.utf8 + cost.utf8 };
    if (next === total || !fitsWith(next, grown)) break;
    end = next;
    usedAtEnd.utf16 = grown.utf16;
    usedAtEnd.utf8 = grown.utf8;
  }
  return { ...base, fragment: text.slice(offset, end), contentCursor: makeCursor(end), complete: false };
}
