// The queue panel keeps a bounded window of loaded pages, not every card: scrolling forward appends a
// page (via its `nextCursor`) and drops pages from the far end once the window is full, and scrolling
// back does the reverse with `previousCursor`. Whole pages are kept so the boundary pages' own cursors
// stay valid after a trim. Pure, so the tests run it without a browser.

import type { QueuePageReply, QueueRow } from '../wire.js';

export type LoadedPage = Extract<QueuePageReply, { status: 'page' }>;

export interface QueueWindow {
  generation: string;
  revision: number;
  pages: LoadedPage[];
}

/** How an edit changed the window, so the list can keep the same cards under the reader's eyes. */
export interface WindowChange {
  window: QueueWindow;
  /** Rows added before the old first row. */
  addedBefore: number;
  /** Rows dropped from the start of the old window. */
  droppedBefore: number;
}

export function windowFrom(page: LoadedPage): QueueWindow {
  return { generation: page.generation, revision: page.revision, pages: [page] };
}

export function rowsOf(window: QueueWindow): QueueRow[] {
  const seen = new Set<string>();
  const rows: QueueRow[] = [];
  for (const page of window.pages) {
    for (const row of page.rows) {
      if (seen.has(row.messageId)) continue;
      seen.add(row.messageId);
      rows.push(row);
    }
  }
  return rows;
}

/** The cursor for the page after the window, when the host said there is more. */
export function cursorAfter(window: QueueWindow): string | null {
  const last = window.pages[window.pages.length - 1];
  return last?.hasMore.after ? last.nextCursor : null;
}

/** The cursor for the page before the window, when the host said there is more. */
export function cursorBefore(window: QueueWindow): string | null {
  const first = window.pages[0];
  return first?.hasMore.before ? first.previousCursor : null;
}

function rowCount(pages: readonly LoadedPage[]): number {
  return pages.reduce((sum, page) => sum + page.rows.length, 0);
}

/** Adds the page after the window; drops pages from the start beyond `maxRows` (never the new page). */
export function appendPage(window: QueueWindow, page: LoadedPage, maxRows: number): WindowChange {
  const pages = [...window.pages, page];
  let droppedBefore = 0;
  while (pages.length > 1 && rowCount(pages) > maxRows) droppedBefore += pages.shift()!.rows.length;
  return {
    window: { generation: page.generation, revision: page.revision, pages },
    addedBefore: 0,
    droppedBefore,
  };
}

/** Adds the page before the window; drops pages from the end beyond `maxRows` (never the new page). */
export function prependPage(window: QueueWindow, page: LoadedPage, maxRows: number): WindowChange {
  const pages = [page, ...window.pages];
  while (pages.length > 1 && rowCount(pages) > maxRows) pages.pop();
  return {
    window: { generation: page.generation, revision: page.revision, pages },
    addedBefore: page.rows.length,
    droppedBefore: 0,
  };
}
