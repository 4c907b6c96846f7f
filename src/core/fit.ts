import { SluiceError } from './errors.js';
import { type Unit, utf8Length, utf16Length } from './measure.js';

/** Text around the joined items for a prefix of a given length. */
export interface FitFrame {
  before: string;
  after: string;
}

/** What to fit: serialized items, how they join, the budgets and the text around them. */
export interface FitOptions {
  /** Already-serialized items, in order (each serialized exactly once by the caller). */
  items: readonly string[];
  /** Joins consecutive items; default ','. */
  separator?: string;
  /** Every given budget must hold for the complete text. */
  budgets: { utf16?: number; utf8?: number };
  /**
   * Text before/after the joined items for a prefix of `count` items. It may depend on `count`
   * (omitted counts, cursors), so it is called a few times, never once per candidate.
   */
  frame: (count: number) => FitFrame;
}

/** The chosen prefix length and its complete text. */
export interface FitResult {
  count: number;
  text: string;
}

/** One budget to honour and the lengths of joined prefixes in its unit. */
interface UnitBudget {
  limit: number;
  /** Length of the first `count` items joined; Infinity once it is certainly over `limit`. */
  joined: (count: number) => number;
  /** A cheap upper bound of `joined(count)`, checked first so exact work is often skipped. */
  joinedUpperBound: (count: number) => number;
  /** Length of a string in this unit. */
  measure: (s: string) => number;
}

/**
 * Largest prefix of `items` whose complete text (`frame(count).before + joined + after`) fits every
 * budget, in O(total size): item lengths are measured once into prefix sums, the joined text is
 * never built or measured per candidate, and `frame` is called only a handful of times.
 *
 * The result always fits when `count > 0`. With `count === 0` the text is the bare frame, which
 * may itself exceed a budget: the caller decides what to do then. The prefix is the largest one
 * as long as the frame never shrinks by more than an item as `count` grows by one (true for
 * omitted counts, cursors and "null at the end" shapes); with stranger frames it is still a
 * prefix that fits.
 */
export function fitLargestPrefix(opts: FitOptions): FitResult {
  const { items, frame } = opts;
  const separator = opts.separator ?? ',';
  const n = items.length;
  const budgets = buildBudgets(items, separator, opts.budgets);

  const frames = new Map<number, { frame: FitFrame; lengths: number[] }>();
  const frameAt = (count: number) => {
    let entry = frames.get(count);
    if (entry === undefined) {
      const f = frame(count);
      entry = { frame: f, lengths: budgets.map((b) => b.measure(f.before) + b.measure(f.after)) };
      frames.set(count, entry);
    }
    return entry;
  };
  const withinAll = (lengths: number[], count: number) =>
    budgets.every(
      (b, i) =>
        lengths[i]! + b.joinedUpperBound(count) <= b.limit || lengths[i]! + b.joined(count) <= b.limit,
    );
  const fits = (count: number) => withinAll(frameAt(count).lengths, count);
  // Largest count whose joined items fit beside a frame of the given lengths; monotone in count,
  // so a binary search over the prefix sums finds it.
  const largestWithFrame = (lengths: number[]) => {
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (withinAll(lengths, mid)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };

  let count: number;
  if (n === 0 || fits(n)) {
    count = n;
  } else {
    // The complete frame is usually the smallest (no cursor, nothing omitted), so it gives an
    // upper bound; step down while the real frame for the candidate makes it too big, jumping
    // with that frame's lengths so a long cursor costs one extra call, not one per item.
    count = Math.min(n - 1, largestWithFrame(frameAt(n).lengths));
    while (count > 0 && !fits(count)) {
      count = Math.min(count - 1, largestWithFrame(frameAt(count).lengths));
    }
    // A jump may have skipped over a count whose frame is shorter; climb back while they fit.
    while (count + 1 < n && fits(count + 1)) count += 1;
  }

  const chosen = frameAt(count).frame;
  const chosenItems = count === n ? items : items.slice(0, count);
  return { count, text: chosen.before + chosenItems.join(separator) + chosen.after };
}

/**
 * Budgets in checking order: UTF-16 first, since string lengths are free and a failing UTF-16
 * check spares the UTF-8 measurement. UTF-8 lengths are measured lazily, only as far as a
 * candidate needs and never past the point where the items alone exceed the budget; a bound of
 * 3 bytes per UTF-16 unit answers generous budgets without measuring at all.
 */
function buildBudgets(
  items: readonly string[],
  separator: string,
  given: { utf16?: number; utf8?: number },
): UnitBudget[] {
  const n = items.length;
  const prefix16 = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) prefix16[i + 1] = prefix16[i]! + items[i]!.length;
  const joined16 = (count: number) => prefix16[count]! + (count > 1 ? (count - 1) * separator.length : 0);

  const budgets: UnitBudget[] = [];
  const { utf16, utf8 } = given;
  if (utf16 !== undefined) {
    assertBudget('utf16', utf16);
    budgets.push({ limit: utf16, joined: joined16, joinedUpperBound: joined16, measure: utf16Length });
  }
  if (utf8 !== undefined) {
    assertBudget('utf8', utf8);
    const prefix8 = new Float64Array(n + 1);
    const separator8 = utf8Length(separator);
    const exact8 = (count: number) => prefix8[count]! + (count > 1 ? (count - 1) * separator8 : 0);
    let measured = 0;
    let overflowFrom = Number.POSITIVE_INFINITY;
    const joined8 = (count: number) => {
      if (count >= overflowFrom) return Number.POSITIVE_INFINITY;
      while (measured < count) {
        prefix8[measured + 1] = prefix8[measured]! + utf8Length(items[measured]!);
        measured += 1;
        if (exact8(measured) > utf8) {
          // Lengths only grow with count: this prefix and every longer one are over budget.
          overflowFrom = measured;
          return Number.POSITIVE_INFINITY;
        }
      }
      return exact8(count);
    };
    // Every UTF-16 unit encodes to at most 3 UTF-8 bytes (lone surrogates: 3, pairs: 4 for 2).
    budgets.push({
      limit: utf8,
      joined: joined8,
      joinedUpperBound: (count) => 3 * joined16(count),
      measure: utf8Length,
    });
  }
  return budgets;
}

function assertBudget(unit: Unit, limit: number): void {
  if (Number.isNaN(limit)) throw new SluiceError('invalid_params', `budget ${unit} is not a number`);
}
