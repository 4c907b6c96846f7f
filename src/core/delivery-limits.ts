import { utf8Length } from './measure.js';
import { DEFAULT_RECEIPT_ROOM, PLAIN_RECEIPT_BYTES, receiptBytes } from './output-cap.js';

/** Caps for one delivery; every given cap holds for the whole rendered text. */
export interface DeliveryLimits {
  maxMessages: number;
  /** UTF-8 bytes of the whole rendered text. */
  maxBytes: number;
  /** Adapter cap in UTF-16 units for the whole text including `wrapperUnits`. */
  maxUnits?: number;
  /**
   * UTF-8 bytes of one `sluice message ls --json --include-body` page in the client's shell
   * (output-cap.ts `defaultPageBytes`). An oldest message too large for the envelope but within a
   * page is then fetched with the page (with what follows it) instead of read in parts.
   */
  pageBytes?: number;
}

/** Provider-neutral defaults (DESIGN.md §3.2); also the Codex adapter's budget. */
export const DEFAULT_DELIVERY_LIMITS: DeliveryLimits = Object.freeze({ maxMessages: 16, maxBytes: 16384 });

/** The limits with defaults filled in and nonsense (NaN) dropped. */
export function resolveLimits(limits: Partial<DeliveryLimits> | undefined): DeliveryLimits {
  const pick = (value: number | undefined, fallback: number) =>
    value === undefined || Number.isNaN(value) ? fallback : value;
  const maxMessages = Math.max(1, Math.floor(pick(limits?.maxMessages, DEFAULT_DELIVERY_LIMITS.maxMessages)));
  const maxBytes = pick(limits?.maxBytes, DEFAULT_DELIVERY_LIMITS.maxBytes);
  const maxUnits = limits?.maxUnits;
  const pageBytes = limits?.pageBytes;
  return {
    maxMessages,
    maxBytes,
    ...(maxUnits === undefined || Number.isNaN(maxUnits) ? {} : { maxUnits }),
    ...(pageBytes === undefined || Number.isNaN(pageBytes) ? {} : { pageBytes }),
  };
}

/**
 * Room a page needs besides its one row: `{"messages":[`, `],"next":"sluice message ls … --since
 * <id> --max-bytes N"}` and the newline, with margin.
 */
const PAGE_FRAME_BYTES = 256;

/**
 * True when a head whose listing row serializes to `rowJson` fits a page of `pageBytes` alone (the
 * envelope passes its projection plus an inbox state; the attachments' local paths count anyway).
 */
export function fitsOnePage(rowJson: string, pageBytes: number | undefined): boolean {
  return pageBytes !== undefined && utf8Length(rowJson) + PAGE_FRAME_BYTES <= pageBytes;
}

/**
 * The listing an envelope chains after the model handles its messages `ids`. A page run without a
 * budget leaves room for the receipts of a whole delivery (16); this one names the room its own
 * delivery leaves (`--max-bytes`), so the first page is as full as the client's cap allows.
 */
export function firstPageCommand(
  list: string,
  pageBytes: number | undefined,
  ids: readonly string[],
): string {
  if (pageBytes === undefined) return list;
  let bytes = pageBytes + DEFAULT_RECEIPT_ROOM * PLAIN_RECEIPT_BYTES;
  for (const id of ids) bytes -= receiptBytes(id);
  return bytes > pageBytes ? `${list} --max-bytes ${bytes}` : list;
}
