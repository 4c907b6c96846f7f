/**
 * The one "fit escaped text into a budget" measure: what a slice of a string costs once
 * `JSON.stringify` writes it inside a string literal, in both units, and the longest slice within
 * given budgets. Fragments, body parts and error messages all cut text with it.
 */

/** Budgets in UTF-16 units and/or UTF-8 bytes; every one given must hold. */
export interface SliceBudgets {
  utf16?: number | undefined;
  utf8?: number | undefined;
}

/** Cost of one code point inside a JSON string literal, and how many raw units it spans. */
export interface EscapedCost {
  utf16: number;
  utf8: number;
  step: number;
}

function isHigh(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLow(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Cost of the code point at `index` as `JSON.stringify` writes it: quotes, backslashes, control
 * characters and lone surrogates are escaped (\b \t \n \f \r in two characters, the rest as
 * \uXXXX); a surrogate pair is copied (2 units, 4 bytes); anything else is copied.
 */
export function escapedCostAt(text: string, index: number): EscapedCost {
  const code = text.charCodeAt(index);
  if (code < 0x20) {
    const w = code === 8 || code === 9 || code === 10 || code === 12 || code === 13 ? 2 : 6;
    return { utf16: w, utf8: w, step: 1 };
  }
  if (code === 0x22 || code === 0x5c) return { utf16: 2, utf8: 2, step: 1 };
  if (code < 0x80) return { utf16: 1, utf8: 1, step: 1 };
  if (code < 0x800) return { utf16: 1, utf8: 2, step: 1 };
  if (isHigh(code)) {
    return index + 1 < text.length && isLow(text.charCodeAt(index + 1))
      ? { utf16: 2, utf8: 4, step: 2 }
      : { utf16: 6, utf8: 6, step: 1 };
  }
  if (isLow(code)) return { utf16: 6, utf8: 6, step: 1 };
  return { utf16: 1, utf8: 3, step: 1 };
}

/** Cost of the code point that ends at `end` (the one a step back would remove). */
export function escapedCostBefore(text: string, end: number): EscapedCost {
  if (end >= 2 && isLow(text.charCodeAt(end - 1)) && isHigh(text.charCodeAt(end - 2))) {
    return { utf16: 2, utf8: 4, step: 2 };
  }
  return escapedCostAt(text, end - 1);
}

/** Where a budgeted slice ends and what its escaped text costs (quotes excluded). */
export interface BudgetedSlice {
  end: number;
  utf16: number;
  utf8: number;
}

/**
 * Longest `text.slice(start, end)` whose JSON-escaped form (without the quotes) costs at most
 * every given budget. Never ends between the halves of a surrogate pair; the work follows the
 * budget, not the length of `text`. `end === start` when not even one code point fits.
 */
export function budgetedSlice(text: string, start: number, budgets: SliceBudgets): BudgetedSlice {
  const max16 = budgets.utf16 ?? Number.POSITIVE_INFINITY;
  const max8 = budgets.utf8 ?? Number.POSITIVE_INFINITY;
  let utf16 = 0;
  let utf8 = 0;
  let end = start;
  while (end < text.length) {
    const cost = escapedCostAt(text, end);
    if (utf16 + cost.utf16 > max16 || utf8 + cost.utf8 > max8) break;
    utf16 += cost.utf16;
    utf8 += cost.utf8;
    end += cost.step;
  }
  return { end, utf16, utf8 };
}
