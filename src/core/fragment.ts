import { createHash } from 'node:crypto';
import { SluiceError } from './errors.js';

/**
 * One slice of a projection's JSON text, as `channel_read` returns it (DESIGN.md §3.1). Joining
 * the fragments of a chain in order gives the projection text back byte for byte.
 */
export interface FragmentResult {
  message_id: string;
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

/**
 * Cost of the code point at `index` inside a JSON string literal, as `JSON.stringify` writes it:
 * `width` escaped UTF-16 units for `step` raw units. Well-formed stringify escapes quotes,
 * backslashes, control characters and lone surrogates; everything else is copied.
 */
function escapedAt(text: string, index: number): { width: number; step: number } {
  const code = text.charCodeAt(index);
  if (code < 0x20) {
    // \b \t \n \f \r have two-character escapes; the rest become \u00XX.
    return { width: code === 8 || code === 9 || code === 10 || code === 12 || code === 13 ? 2 : 6, step: 1 };
  }
  if (code === 0x22 || code === 0x5c) return { width: 2, step: 1 };
  if (isHighSurrogate(code)) {
    return index + 1 < text.length && isLowSurrogate(text.charCodeAt(index + 1))
      ? { width: 2, step: 2 }
      : { width: 6, step: 1 };
  }
  if (isLowSurrogate(code)) return { width: 6, step: 1 };
  return { width: 1, step: 1 };
}

/** Cost of the code point that ends at `end` (the one a step back would remove). */
function escapedBefore(text: string, end: number): { width: number; step: number } {
  if (end >= 2 && isLowSurrogate(text.charCodeAt(end - 1)) && isHighSurrogate(text.charCodeAt(end - 2))) {
    return { width: 2, step: 2 };
  }
  return escapedAt(text, end - 1);
}

/** Options for {@link fragmentAt}. */
export interface FragmentOptions {
  messageId: string;
  /** The projection's complete JSON text. */
  text: string;
  /** Where to start, in UTF-16 units; must be a code point boundary. */
  offset: number;
  /** Ceiling for `JSON.stringify(result).length`. */
  budget: number;
  /** Content cursor for a continuation at `end`; called only when `end < total`. */
  makeCursor: (end: number) => string;
}

/**
 * Largest slice of `text` starting at `offset` (UTF-16 units) such that the serialized
 * FragmentResult is <= `budget` UTF-16 units. Never splits a surrogate pair and always makes
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
    sha256: sha256Hex(text),
    offset,
    total,
    fragment: '',
    contentCursor: null,
    complete: true,
    outputLimit: budget,
  };
  const overheadFor = (cursor: string | null) =>
    JSON.stringify({ ...base, contentCursor: cursor, complete: cursor === null }).length;

  // One forward pass, stopping as soon as neither shape (complete, or partial with the shortest
  // possible cursor) could hold more, so the cost is bounded by the budget, not the text.
  const roomComplete = budget - overheadFor(null);
  const roomPartial = budget - overheadFor('');
  const room = Math.max(roomComplete, roomPartial);
  let used = 0;
  let index = offset;
  let end = offset;
  let usedAtEnd = 0;
  while (index < total) {
    const { width, step } = escapedAt(text, index);
    if (used + width > room) break;
    used += width;
    index += step;
    if (used <= roomPartial) {
      end = index;
      usedAtEnd = used;
    }
  }
  if (index === total && used <= roomComplete) {
    return { ...base, fragment: text.slice(offset), complete: true };
  }

  // Partial: the cursor for the chosen end takes room too. Step back while it does not fit, then
  // forward while a longer slice (whose cursor may be shorter) still does.
  const fitsWith = (candidateEnd: number, escaped: number) =>
    escaped <= budget - overheadFor(makeCursor(candidateEnd));
  while (end > offset && !fitsWith(end, usedAtEnd)) {
    const { width, step } = escapedBefore(text, end);
    end -= step;
    usedAtEnd -= width;
  }
  if (end === offset) {
    throw new SluiceError('too_large', 'not even one character of the message fits in the output limit', {
      budget,
    });
  }
  while (end < total) {
    const { width, step } = escapedAt(text, end);
    const next = end + step;
    if (next === total || !fitsWith(next, usedAtEnd + width)) break;
    end = next;
    usedAtEnd += width;
  }
  return { ...base, fragment: text.slice(offset, end), contentCursor: makeCursor(end), complete: false };
}
