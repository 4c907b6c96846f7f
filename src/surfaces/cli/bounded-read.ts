import { SluiceError } from '../../core/errors.js';
import { fitJsonPage } from '../../core/fit.js';
import { sliceUtf16Safe } from '../../core/fragment.js';

/**
 * Default output budget of a model read, in characters (UTF-16 units, newline included): Claude
 * Code's Bash tool keeps 30,000 characters of a command's output, so a read within it is never cut.
 */
export const DEFAULT_MAX_CHARS = 30_000;

/** Smallest accepted `--max-chars`: room for one message's headers and a part of its body. */
export const MIN_MAX_CHARS = 2_000;

/** One message as `message ls --json` and `message read --json` print it (one shape for both). */
export interface MessageRow {
  id: string;
  channel: string;
  from: string;
  createdAt: string;
  subject: string | null;
  replyTo: string | null;
  /** The reader's inbox state, or null when the message is not in the reader's inbox. */
  state: string | null;
  attachments: readonly unknown[];
  body?: string;
}

/** The commands a bounded read names to continue. */
export interface ContinueCommands {
  /** Lists on, after message `id`. */
  listAfter: (id: string) => string;
  /** Reads message `id`, from UTF-16 offset `offset` of its body (0: the first part). */
  readFrom: (id: string, offset: number) => string;
}

/**
 * A page of complete messages within `maxChars` (newline included), the largest FIFO prefix:
 * `{"messages":[…],"next":…}`. `next` is the exact command that continues, null when the listing
 * is complete. When the first message is too large alone the page holds none: `next` reads it in
 * parts and `after` lists the messages after it.
 */
export function boundedMessagePage(
  rows: readonly MessageRow[],
  hasMore: boolean,
  maxChars: number,
  commands: ContinueCommands,
): { text: string; count: number } {
  const fitted = fitJsonPage({
    arrayKey: 'messages',
    items: rows,
    budgets: { utf16: maxChars - 1 },
    rest: (count) => {
      if (count === rows.length) {
        const last = rows[count - 1];
        return { next: hasMore && last ? commands.listAfter(last.id) : null };
      }
      if (count === 0) {
        const head = rows[0] as MessageRow;
        return { after: commands.listAfter(head.id), next: commands.readFrom(head.id, 0) };
      }
      return { next: commands.listAfter((rows[count - 1] as MessageRow).id) };
    },
  });
  return { text: `${fitted.text}\n`, count: fitted.count };
}

/**
 * One message within `maxChars` (newline included). A body too large comes in lossless parts:
 * `part` gives the body slice's UTF-16 `offset` and the body's `total` length, and `next` reads the
 * following part (null on the last). Joining the parts' bodies gives the body back exactly.
 */
export function boundedMessagePart(
  row: MessageRow & { body: string },
  offset: number,
  maxChars: number,
  commands: ContinueCommands,
): string {
  const body = row.body;
  if (!Number.isInteger(offset) || offset < 0 || offset > body.length) {
    throw new SluiceError('invalid_params', `--offset must be from 0 to ${body.length} for this message`);
  }
  const render = (end: number) => {
    const whole = offset === 0 && end === body.length;
    const shown = { ...row, body: body.slice(offset, end) };
    const text = whole
      ? JSON.stringify({ ...shown, next: null })
      : JSON.stringify({
          ...shown,
          part: { offset, total: body.length },
          next: end < body.length ? commands.readFrom(row.id, end) : null,
        });
    return `${text}\n`;
  };
  const whole = render(body.length);
  if (offset === 0 && whole.length <= maxChars) return whole;
  // Largest cut whose rendering fits; a cut never splits a surrogate pair, and a later cut never
  // renders shorter, so a binary search over cut positions finds it.
  let lo = offset;
  let hi = body.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (render(sliceUtf16Safe(body, offset, mid)).length <= maxChars) lo = mid;
    else hi = mid - 1;
  }
  const end = sliceUtf16Safe(body, offset, lo);
  if (end === offset && offset < body.length) {
    throw new SluiceError('invalid_params', `--max-chars ${maxChars} leaves no room for this message's body`);
  }
  return render(end);
}
