import { SluiceError } from './errors.js';
import { type FitFrame, fitLargestPrefix } from './fit.js';
import { jsonAround } from './json-frame.js';
import { utf8Length } from './measure.js';

/** The budgets a complete reply text must keep: UTF-16 units, UTF-8 bytes, or both. */
export interface Budgets {
  utf16?: number;
  utf8?: number;
}

/**
 * What every bounded reader returns: the exact text sent (the budget was measured on it) and the
 * value it encodes. The value is built from the objects the text was serialized from, never by
 * parsing the text, so readers keep their rows and pages plain JSON data (no undefined members):
 * then `JSON.parse(text)` equals `value`, which the readers' tests check.
 */
export interface Bounded<T> {
  text: string;
  value: T;
}

/** A value that needs no fitting, with its JSON text. */
export function boundedJson<T>(value: T): Bounded<T> {
  return { text: JSON.stringify(value), value };
}

/** True when `text` keeps every given budget. */
export function withinBudgets(text: string, budgets: Budgets): boolean {
  return (
    (budgets.utf16 === undefined || text.length <= budgets.utf16) &&
    (budgets.utf8 === undefined || utf8Length(text) <= budgets.utf8)
  );
}

/**
 * Which rows a list may drop to fit: the last ones (`prefix`), the first ones (`suffix`), or the
 * first ones and then the last ones but never the row at index `around` (a page centred on it).
 */
export type Keep = 'prefix' | 'suffix' | { around: number };

/** How a leading row too large for the budget is still sent, so a reader always moves on (I5). */
export interface OversizedRow<Row> {
  /**
   * The row with its bulky fields cut. It must keep whatever `page` reads of the row (its id,
   * position, state), since the page around it is the one for the full row at the same index.
   */
  compact: (row: Row) => Row;
  /** The `too_large` line when even the compact row does not fit. */
  refusal: string;
  /** Rows whose JSON is over this many UTF-8 bytes are sent compact wherever they stand. */
  compactOverBytes?: number;
}

/** The property names of `Page` that hold an array of `Row`. */
export type RowsKey<Page, Row> = {
  [K in keyof Page & string]: Page[K] extends readonly Row[] ? K : never;
}[keyof Page & string];

/** What a bounded list reader declares: its rows, where they go, the budget and the fallback. */
export interface BoundedListOptions<Row, Page extends object> {
  /** The candidate rows in page order, each in the shape it is sent in. */
  rows: readonly Row[];
  /** The member of the page that holds the rows. */
  key: RowsKey<Page, Row>;
  budgets: Budgets;
  /**
   * The page around the rows `[first, end)`: cursors, counts, `hasMore`. Its `key` member is a
   * placeholder (its text is never used) that the rows replace. Called a handful of times per fit,
   * never once per row.
   */
  page: (first: number, end: number) => Page;
  /** Default `prefix`. */
  keep?: Keep;
  /** Without it, a first row that alone does not fit leaves the bare page (which may be over). */
  oversized?: OversizedRow<Row>;
}

/** A fitted list: the page, its text, which rows it kept, and each candidate row's JSON. */
export interface BoundedList<Page> extends Bounded<Page> {
  /** The kept rows are `rows.slice(first, end)` (one of them compact after a fallback). */
  first: number;
  end: number;
  /** Each candidate row's JSON text, serialized once, for a caller that extends the page. */
  rowTexts: readonly string[];
}

/**
 * Fits a JSON object with an array of rows to its budgets: each row is serialized once, the largest
 * run of rows that `keep` allows is chosen from prefix sums (core/fit.ts), the text around them
 * comes from `JSON.stringify` of the page (core/json-frame.ts), and a leading row that alone does
 * not fit is sent compact when `oversized` says how. The text is exactly `JSON.stringify(value)`;
 * the value is the page object with the kept rows, never a parse of the text.
 */
export function fitBoundedList<Row, Page extends object>(
  opts: BoundedListOptions<Row, Page>,
): BoundedList<Page> {
  const { rows, budgets, oversized } = opts;
  const key: string = opts.key;
  const n = rows.length;
  const shown: Row[] = new Array(n);
  const texts: string[] = new Array(n);
  const over = oversized?.compactOverBytes;
  for (let i = 0; i < n; i++) {
    let row = rows[i] as Row;
    let text = serializeRow(row);
    // A UTF-16 unit is at most 3 UTF-8 bytes: most rows are answered without measuring them.
    if (over !== undefined && text.length * 3 > over && utf8Length(text) > over) {
      row = (oversized as OversizedRow<Row>).compact(row);
      text = serializeRow(row);
    }
    texts[i] = text;
    // A row with no JSON text is `null` in the array, in the value as in the text.
    shown[i] = text === 'null' ? (null as Row) : row;
  }

  const frames = new Map<number, { page: Page; frame: FitFrame }>();
  const frameOf = (first: number, end: number) => {
    const id = first * (n + 1) + end;
    let entry = frames.get(id);
    if (entry === undefined) {
      const page = opts.page(first, end);
      if (Object.hasOwn(page, 'toJSON')) throw new SluiceError('internal', 'a page cannot have toJSON');
      const around = jsonAround(page as Record<string, unknown>, [key]);
      entry = { page, frame: { before: `${around.before}[`, after: `]${around.after}` } };
      frames.set(id, entry);
    }
    return entry;
  };
  // How many of `items` fit, the page for `count` of them being the one around `range(count)`.
  const fitFrom = (items: readonly string[], range: (count: number) => [number, number]) =>
    fitLargestPrefix({ items, budgets, frame: (count) => frameOf(...range(count)).frame });

  const keep = opts.keep ?? 'prefix';
  let first = 0;
  let end = 0;
  let lead = 0;
  // The prefix's text as the fit built it (the other rules join their rows in page order below).
  let prefixText: string | undefined;
  if (keep === 'prefix') {
    const fit = fitFrom(texts, (count) => [0, count]);
    end = fit.count;
    prefixText = fit.text;
  } else if (keep === 'suffix') {
    // A suffix of the rows is a prefix of the reversed rows, with the same joined length.
    first = n - fitFrom([...texts].reverse(), (count) => [n - count, n]).count;
    end = n;
    lead = n - 1;
  } else {
    const anchor = keep.around;
    if (n > 0 && !(Number.isInteger(anchor) && anchor >= 0 && anchor < n))
      throw new SluiceError('internal', `around index ${anchor} is not a row`);
    lead = anchor;
    // Drop earlier rows until the kept run reaches the anchor.
    for (first = 0; first <= anchor && n > 0; first++) {
      const start = first;
      end = start + fitFrom(texts.slice(start), (count) => [start, start + count]).count;
      if (end > anchor) break;
    }
    if (n === 0) first = end = 0;
    else if (first > anchor) first = end = anchor;
  }

  if (n > 0 && end === first && oversized !== undefined) {
    const lone = oversized.compact(rows[lead] as Row);
    const { page, frame } = frameOf(lead, lead + 1);
    const loneText = serializeRow(lone);
    const text = frame.before + loneText + frame.after;
    if (!withinBudgets(text, budgets)) throw new SluiceError('too_large', oversized.refusal);
    const value = withRows(page, key, [loneText === 'null' ? null : lone]);
    return { text, value, first: lead, end: lead + 1, rowTexts: texts };
  }
  const { page, frame } = frameOf(first, end);
  const text = prefixText ?? frame.before + texts.slice(first, end).join(',') + frame.after;
  return { text, value: withRows(page, key, shown.slice(first, end)), first, end, rowTexts: texts };
}

/** `JSON.stringify` writes undefined, functions and symbols in an array as `null`. */
function serializeRow(row: unknown): string {
  const text: string | undefined = JSON.stringify(row);
  return text === undefined ? 'null' : text;
}

/** The page with its rows in place of the placeholder (same key order, so the same text). */
function withRows<Page extends object>(page: Page, key: string, rows: readonly unknown[]): Page {
  return { ...page, [key]: rows };
}
