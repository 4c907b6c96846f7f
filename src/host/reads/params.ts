import type { Bounded } from '../../core/bounded.js';
import { SluiceError } from '../../core/errors.js';
import type { ReaderMessage } from '../messages/provenance.js';
import type { PendingReceipt } from '../turns/index.js';

/** `channel_read` parameters (DESIGN.md §3.1). */
export interface ChannelReadParams {
  channel_id?: string | undefined;
  unread?: boolean | undefined;
  cursor?: string | undefined;
  limit?: number | undefined;
  message_id?: string | undefined;
  content_cursor?: string | undefined;
}

/** `channel_search` parameters (DESIGN.md §3.1). */
export interface ChannelSearchParams {
  query: string;
  channel_id?: string | undefined;
  cursor?: string | undefined;
  limit?: number | undefined;
}

/**
 * Where to read an oversized message whole: `channel_read {message_id}`. The channel is left out
 * only when an id is too long to show both within the budget.
 */
export interface ReadContentLocator {
  channel_id?: string;
  message_id: string;
}

/**
 * A page of complete projections, each with what its sender is to the reader, the largest prefix
 * of the fetched candidates that fits.
 */
export interface PageResult {
  messages: ReaderMessage[];
  nextCursor: string | null;
  /** Fetched candidates left out of this page (not a total over history). */
  omitted: number;
  outputLimit: number;
  readContent?: ReadContentLocator;
}

/** A read result: the exact text the reader receives and the value it encodes, with its receipt. */
export interface ReadOutcome<T> extends Bounded<T> {
  /**
   * In an open turn, what the read adds to the turn's coverage once `text` reached the client:
   * the surface that hands it over confirms it (host/receipts.ts). Absent for a peek.
   */
  receipt?: PendingReceipt | undefined;
}

export const DEFAULT_PAGE_LIMIT = 20;
export const MAX_PAGE_LIMIT = 100;
/** Longest search query accepted, in UTF-16 units (the FTS query keeps at most 32 terms anyway). */
export const MAX_QUERY_UNITS = 1000;

/** Each named parameter, when given, must be a non-empty string. */
export function requireNonEmptyStrings<T extends object>(
  params: T,
  keys: readonly (keyof T & string)[],
): void {
  for (const key of keys) {
    const value = params[key];
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw new SluiceError('invalid_params', `${key} must be a non-empty string`);
    }
  }
}

export function validateLimit(limit: unknown): void {
  if (
    limit !== undefined &&
    (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > MAX_PAGE_LIMIT)
  ) {
    throw new SluiceError('invalid_params', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`);
  }
}
