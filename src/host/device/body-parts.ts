import type { Bounded } from '../../core/bounded.js';
import { budgetedSlice } from '../../core/budgeted-slice.js';
import { SluiceError } from '../../core/errors.js';
import { type JsonFrame, jsonAround, withMemberAt } from '../../core/json-frame.js';
import { utf8Length } from '../../core/measure.js';

/** A body part to render: the body, where the part starts, the budget and the result around it. */
export interface BodyPartOptions<T> {
  body: string;
  /** Where this part starts, in UTF-16 units. */
  offset: number;
  budgetBytes: number;
  /** The chain of keys of the part's string member in the result, e.g. `['part', 'text']`. */
  path: readonly string[];
  /** The result holding `part` at `path`, for the offset the next part starts at (null: none). */
  result: (part: string, nextOffset: number | null) => T;
}

/**
 * The result with the longest part of `body` from `offset` that keeps its whole JSON text within
 * `budgetBytes` UTF-8 bytes. Costs follow `JSON.stringify` exactly (core/budgeted-slice.ts), a
 * part never ends between the halves of a surrogate pair, and the text around the part comes from
 * `JSON.stringify` of the result (core/json-frame.ts), never written by hand.
 */
export function renderBodyPart<T extends object>(opts: BodyPartOptions<T>): Bounded<T> {
  const { body, offset, path } = opts;
  if (offset > body.length)
    throw new SluiceError('invalid_cursor', 'invalid cursor: offset past the end of the body');
  const frames = new Map<number | null, { result: T; frame: JsonFrame }>();
  const at = (next: number | null) => {
    let entry = frames.get(next);
    if (entry === undefined) {
      const result = opts.result('', next);
      entry = { result, frame: jsonAround(result as Record<string, unknown>, path) };
      frames.set(next, entry);
    }
    return entry;
  };
  // The longest frame is the one with the largest next offset (most digits in its cursor).
  const longest = (side: keyof JsonFrame) =>
    Math.max(utf8Length(at(null).frame[side]), utf8Length(at(body.length).frame[side]));
  const available = opts.budgetBytes - longest('before') - longest('after') - 2;
  const { end } = budgetedSlice(body, offset, { utf8: Math.max(0, available) });
  if (end === offset && offset < body.length) {
    throw new SluiceError(
      'too_large',
      `the reply budget (${opts.budgetBytes} bytes) cannot hold any of the body`,
    );
  }
  const part = body.slice(offset, end);
  const { result, frame } = at(end < body.length ? end : null);
  return {
    text: frame.before + JSON.stringify(part) + frame.after,
    value: withMemberAt(result as Record<string, unknown>, path, part) as T,
  };
}
