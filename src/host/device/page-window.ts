import type { StaleReason } from '../../core/wire/index.js';
import { type CardQuery, type CardRow, inboxPositionOf, loadCards } from '../../store/ops/queue-pages.js';
import type { Db } from '../../store/store.js';
import type { QueuePageCursor } from '../reads/cursors.js';
import { HEAD_CHARS } from './cards.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { StaleReason };

/** The candidate rows of one page, before it is fitted to the reply budget. */
export interface PageWindow {
  /** Candidate rows before the anchor (ascending) and from the anchor on (ascending). */
  before: CardRow[];
  after: CardRow[];
  /** Whether more rows exist beyond the fetched candidates in each direction. */
  beforeMore: boolean;
  afterMore: boolean;
  /** forward keeps a prefix, backward a suffix, around keeps the anchor (first of `after`). */
  mode: 'forward' | 'backward' | 'around';
}

/** The cards a page draws from: one agent's pending entries, maybe of one source. */
export type CardScope = Pick<CardQuery, 'agentId' | 'channelIds' | 'source'>;

function cards(db: Db, scope: CardScope, q: Omit<CardQuery, keyof CardScope | 'headChars'>) {
  return loadCards(db, { ...scope, ...q, headChars: HEAD_CHARS });
}

/** The first page: the oldest `size` cards. */
export async function firstWindow(db: Db, scope: CardScope, size: number): Promise<PageWindow> {
  const rows = await cards(db, scope, { newestFirst: false, limit: size + 1 });
  return {
    before: [],
    after: rows.slice(0, size),
    beforeMore: false,
    afterMore: rows.length > size,
    mode: 'forward',
  };
}

/**
 * The page a cursor continues to, or why the cursor is stale: its boundary card left the queue or
 * changed state (checked before anything else is read).
 */
export async function windowFromCursor(
  db: Db,
  scope: CardScope,
  cursor: QueuePageCursor,
  size: number,
): Promise<PageWindow | StaleReason> {
  const [anchor] = await cards(db, scope, { atPosition: cursor.p, newestFirst: false, limit: 1 });
  if (!anchor || anchor.message_id !== cursor.m) return 'anchor-gone';
  if (anchor.state !== cursor.s) return 'anchor-moved';
  if (cursor.d === 'after') {
    const rows = await cards(db, scope, { afterPosition: cursor.p, newestFirst: false, limit: size + 1 });
    return {
      before: [],
      after: rows.slice(0, size),
      beforeMore: true,
      afterMore: rows.length > size,
      mode: 'forward',
    };
  }
  const rows = await cards(db, scope, { beforePosition: cursor.p, newestFirst: true, limit: size + 1 });
  return {
    before: rows.slice(0, size).reverse(),
    after: [],
    beforeMore: rows.length > size,
    afterMore: true,
    mode: 'backward',
  };
}

/**
 * The page centred on one card, filled from the other side near either end of the queue; stale
 * (`anchor-gone`) when that card is not a pending card this reader may see.
 */
export async function windowAround(
  db: Db,
  scope: CardScope,
  messageId: string,
  size: number,
): Promise<PageWindow | StaleReason> {
  const position = await inboxPositionOf(db, scope.agentId, messageId);
  const [anchor] =
    position === undefined
      ? []
      : await cards(db, scope, { atPosition: position, newestFirst: false, limit: 1 });
  if (!anchor) return 'anchor-gone';
  const earlier = await cards(db, scope, { beforePosition: anchor.position, newestFirst: true, limit: size });
  const later = await cards(db, scope, { afterPosition: anchor.position, newestFirst: false, limit: size });
  const half = Math.floor((size - 1) / 2);
  const beforeCount = Math.min(earlier.length, Math.max(half, size - 1 - later.length));
  const afterCount = Math.min(later.length, size - 1 - beforeCount);
  return {
    before: earlier.slice(0, beforeCount).reverse(),
    beforeMore: earlier.length > beforeCount,
    after: [anchor, ...later.slice(0, afterCount)],
    afterMore: later.length > afterCount,
    mode: 'around',
  };
}
