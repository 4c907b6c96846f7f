import { fitBoundedList } from '../../core/bounded.js';
import { SluiceError } from '../../core/errors.js';
import { jsonAround } from '../../core/json-frame.js';
import { utf8Length } from '../../core/measure.js';
import { receiptBytes } from '../../core/output-cap.js';
import { quoteInput } from '../../core/text.js';
import {
  asBudget,
  bodyVersion,
  type ContinueCommands,
  fitsReadBudget,
  longestPartEnd,
  type MessageRow,
  type ReadBudget,
} from './bounded-read.js';

/**
 * A first part shorter than this (UTF-8 bytes of its escaped body) is not worth printing the
 * row's headers twice: the page ends before that message instead.
 */
export const MIN_TAIL_PART_BYTES = 1_000;

/** A row whose body is a slice of the stored one: `part` says where it starts and the whole length. */
export type PartRow = MessageRow & { body: string; part: { offset: number; total: number } };

/** What {@link boundedMessagePage} printed. */
export interface MessagePage {
  text: string;
  /** Entries in `messages`, a part included. */
  count: number;
}

/**
 * A page of `message ls --json --include-body` within `budget` (a number: characters; newline
 * included): `{"messages":[…],"next":…}`, oldest first, filled to the budget. Whole messages as
 * far as they fit; when the next one does not fit whole, the page ends with its first part (a
 * lossless slice of the body, never inside a surrogate pair, with `part: {offset, total}`) and
 * `next` continues that body from where the part stops (`--resume ID --offset N`), then the
 * messages after it. `startOffset` > 0 starts the page with the rest of `rows[0]`'s body from that
 * offset (what such a `next` asks for). A message counts as received only once its last part has
 * been printed, so only whole rows and a part that completes a body are handled with this page:
 * with `budget.cap` (a model's shell) `next` carries `--max-bytes`, the cap less their receipts,
 * which print before the next page in the same command. A page holds no more rows than leave half
 * the cap to the page after them.
 */
export function boundedMessagePage(
  rows: readonly MessageRow[],
  hasMore: boolean,
  budget: ReadBudget | number,
  commands: ContinueCommands,
  startOffset = 0,
): MessagePage {
  const { chars, bytes, cap } = asBudget(budget);
  const first = rows[0];
  const firstBody = first?.body ?? '';
  if (!Number.isInteger(startOffset) || startOffset < 0 || startOffset > firstBody.length) {
    throw new SluiceError(
      'invalid_params',
      `--offset must be from 0 to ${firstBody.length} for this message`,
    );
  }
  // receipts[k]: the bytes handling the first k rows prints.
  const receipts = [0];
  let shown = rows;
  if (cap !== undefined) {
    for (const [i, row] of rows.entries()) {
      const total = (receipts[i] as number) + receiptBytes(row.id);
      if (i > 0 && total > cap / 2) {
        shown = rows.slice(0, i);
        break;
      }
      receipts.push(total);
    }
  }
  const cutForReceipts = shown.length < rows.length;
  const more = hasMore || cutForReceipts;
  const budgetAfter = (handled: number) =>
    cap === undefined ? undefined : cap - (receipts[handled] as number);
  const items: MessageRow[] =
    first !== undefined && startOffset > 0
      ? [partOf(first, startOffset, firstBody.length), ...shown.slice(1)]
      : [...shown];
  const afterWhole = (count: number) => {
    const last = items[count - 1];
    if (last === undefined) return null;
    return count < items.length || more ? commands.listAfter(last.id, budgetAfter(count)) : null;
  };
  const fitted = fitBoundedList({
    rows: items,
    key: 'messages',
    budgets: bytes === undefined ? { utf16: chars - 1 } : { utf16: chars - 1, utf8: bytes - 1 },
    page: (_first, count) => ({ messages: [] as MessageRow[], next: afterWhole(count) }),
  });
  const whole = fitted.end;
  if (whole === items.length) return { text: `${fitted.text}\n`, count: whole };
  // The next message does not fit whole: end the page with as much of its body as fits.
  const row = shown[whole] as MessageRow;
  const body = row.body ?? '';
  const version = bodyVersion(body);
  const offset = whole === 0 ? startOffset : 0;
  const before = fitted.rowTexts.slice(0, whole);
  const render = (end: number) => {
    const complete = end === body.length;
    const next = complete
      ? afterWhole(whole + 1)
      : commands.listFrom(row.id, end, version, budgetAfter(whole));
    const page = { messages: [...items.slice(0, whole), partOf(row, offset, end)], next };
    return `${JSON.stringify(page)}\n`;
  };
  const frames = [body.length, offset].map((end) =>
    partFrame(before, row, offset, end, commands, budgetAfter, version),
  );
  const end = longestPartEnd(body, offset, budget, frames, render);
  if (end === offset) {
    if (whole > 0) return { text: `${fitted.text}\n`, count: whole };
    throw new SluiceError(
      'invalid_params',
      `the output budget (${bytes ?? chars}) leaves no room for the body of message ${quoteInput(row.id)}`,
    );
  }
  const text = render(end);
  // A short first part behind whole rows only repeats the row's headers: those rows are the page.
  if (whole > 0 && partBytes(body, offset, end) < MIN_TAIL_PART_BYTES) {
    return { text: `${fitted.text}\n`, count: whole };
  }
  if (!fitsReadBudget(text, budget)) throw new SluiceError('internal', 'a page part overran its budget');
  return { text, count: whole + 1 };
}

/** `row` with its body cut to [offset, end) and the `part` that says so. */
function partOf(row: MessageRow, offset: number, end: number): PartRow {
  const body = row.body ?? '';
  return { ...row, body: body.slice(offset, end), part: { offset, total: body.length } };
}

/**
 * The whole page text around an empty part body, with `next` continuing from `end` (the frame a
 * part ending there prints): `longestPartEnd` fits the body beside the longest of these.
 */
function partFrame(
  before: readonly string[],
  row: MessageRow,
  offset: number,
  end: number,
  commands: ContinueCommands,
  budgetAfter: (handled: number) => number | undefined,
  version: string,
): string {
  const part = jsonAround({ ...partOf(row, offset, offset) }, ['body']);
  const next = commands.listFrom(row.id, end, version, budgetAfter(before.length));
  const lead = before.length > 0 ? `${before.join(',')},` : '';
  return `{"messages":[${lead}${part.before}""${part.after}],"next":${JSON.stringify(next)}}\n`;
}

/** UTF-8 bytes of body[offset, end) as the page prints it (escaped). */
function partBytes(body: string, offset: number, end: number): number {
  return utf8Length(JSON.stringify(body.slice(offset, end))) - 2;
}
