import { budgetedSlice } from '../../core/budgeted-slice.js';
import { SluiceError } from '../../core/errors.js';
import { jsonAround } from '../../core/json-frame.js';
import { utf8Length } from '../../core/measure.js';
import type { Rendered } from './cards.js';

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
 * `JSON.stringify` exactly (core/budgeted-slice.ts), and a part never ends between the halves of a
 * surrogate pair.
 */
export function renderBodyPart<T>(opts: BodyPartOptions): Rendered<T> {
  const { body, offset } = opts;
  if (offset > body.length)
    throw new SluiceError('invalid_cursor', 'invalid cursor: offset past the end of the body');
  // The longest tail is the one with the largest next offset (most digits in its cursor).
  const tailBytes = Math.max(utf8Length(opts.tail(null)), utf8Length(opts.tail(body.length)));
  const available = opts.budgetBytes - utf8Length(opts.head) - tailBytes - 2;
  const { end } = budgetedSlice(body, offset, { utf8: Math.max(0, available) });
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

/**
 * {@link renderBodyPart} for a result given as an object: `result(part, next)` builds it, and the
 * part is the string member at `path`. The text around the part comes from `JSON.stringify`
 * (core/json-frame.ts), never written by hand.
 */
export function renderBodyPartOf<T>(opts: {
  body: string;
  offset: number;
  budgetBytes: number;
  path: readonly string[];
  result: (part: string, nextOffset: number | null) => Record<string, unknown>;
}): Rendered<T> {
  const frame = (next: number | null) => jsonAround(opts.result('', next), opts.path);
  return renderBodyPart<T>({
    body: opts.body,
    offset: opts.offset,
    budgetBytes: opts.budgetBytes,
    head: frame(null).before,
    tail: (next) => frame(next).after,
  });
}
