import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isMessageStub, mergeMessages, mergeStub } from '../../web/src/channels/history.js';
import {
  appendPage,
  cursorAfter,
  cursorBefore,
  type LoadedPage,
  prependPage,
  rowsOf,
  windowFrom,
} from '../../web/src/queue/window.js';
import { readAllParts } from '../../web/src/read-parts.js';
import type {
  LiveMessageStub,
  MessageReadReply,
  QueueRow,
  TimelineEntry,
  TimelineMessage,
} from '../../web/src/wire.js';
import { hostileString } from '../core/arbitraries.js';

function row(position: number): QueueRow {
  return {
    messageId: `m${position}`,
    channelId: 'c1',
    position,
    state: 'waiting',
    source: 'person',
    senderLabels: ['owner'],
    senderCount: 1,
    preview: `card ${position}`,
    truncated: false,
    bodyBytes: 10,
    createdAt: '2026-01-01T00:00:00.000Z',
    attachmentCount: 0,
  };
}

/** Cuts positions [0, total) into pages of the given sizes, with cursors like the host's. */
function pagesOf(total: number, sizes: number[]): LoadedPage[] {
  const pages: LoadedPage[] = [];
  let start = 0;
  for (const size of sizes) {
    if (start >= total) break;
    const end = Math.min(total, start + size);
    pages.push({
      status: 'page',
      generation: 'g1',
      revision: 1,
      rows: Array.from({ length: end - start }, (_, i) => row(start + i)),
      hasMore: { before: start > 0, after: end < total },
      previousCursor: start > 0 ? `before:${start}` : null,
      nextCursor: end < total ? `after:${end - 1}` : null,
    });
    start = end;
  }
  return pages;
}

describe('the queue panel’s window of loaded pages', () => {
  it('walking forward then back keeps cards in order, bounded, with the boundary pages’ own cursors', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 150 }),
        (total, sizes, maxRows) => {
          const pages = pagesOf(total, [...sizes, ...Array(400).fill(60)]);
          let win = windowFrom(pages[0]!);
          let firstPage = 0;
          let lastPage = 0;
          // Forward to the end.
          while (cursorAfter(win) !== null) {
            lastPage += 1;
            const change = appendPage(win, pages[lastPage]!, maxRows);
            win = change.window;
            firstPage = lastPage - win.pages.length + 1;
            const rows = rowsOf(win);
            const positions = rows.map((r) => r.position);
            expect(positions).toEqual([...positions].sort((a, b) => a - b));
            expect(new Set(positions).size).toBe(positions.length);
            // Bounded: over the cap only when a single page alone exceeds it.
            if (win.pages.length > 1) expect(rows.length).toBeLessThanOrEqual(maxRows);
            expect(cursorBefore(win)).toBe(pages[firstPage]!.previousCursor);
          }
          expect(rowsOf(win).at(-1)?.position).toBe(total - 1);
          // Back to the start.
          while (cursorBefore(win) !== null) {
            firstPage -= 1;
            const change = prependPage(win, pages[firstPage]!, maxRows);
            expect(change.addedBefore).toBe(pages[firstPage]!.rows.length);
            win = change.window;
            expect(cursorAfter(win)).toBe(win.pages.at(-1)!.nextCursor);
          }
          expect(rowsOf(win)[0]?.position).toBe(0);
          expect(firstPage).toBe(0);
        },
      ),
    );
  });

  it('reports how many rows an append dropped from the start, so the list can keep its place', () => {
    const pages = pagesOf(120, [40, 40, 40]);
    const two = appendPage(windowFrom(pages[0]!), pages[1]!, 80);
    expect(two.droppedBefore).toBe(0);
    const three = appendPage(two.window, pages[2]!, 80);
    expect(three.droppedBefore).toBe(40);
    expect(rowsOf(three.window).map((r) => r.position)).toEqual(Array.from({ length: 80 }, (_, i) => 40 + i));
  });

  it('shows a card once even if two pages carry it', () => {
    const [first] = pagesOf(10, [10]);
    const overlapping: LoadedPage = { ...first!, rows: first!.rows.slice(5) };
    const win = appendPage(windowFrom(first!), overlapping, 100).window;
    expect(rowsOf(win).map((r) => r.messageId)).toEqual(first!.rows.map((r) => r.messageId));
  });
});

/** A host that serves `body` in parts at the given cut points, like `queue.read` / `message.read`. */
function partServer(body: string, cuts: number[]) {
  const ends = [...new Set(cuts.map((c) => Math.min(body.length, c)).filter((c) => c > 0)), body.length].sort(
    (a, b) => a - b,
  );
  return async (cursor: string | null): Promise<MessageReadReply> => {
    const offset = cursor === null ? 0 : Number(cursor);
    const end = ends.find((e) => e > offset) ?? body.length;
    return {
      status: 'body',
      messageId: 'm1',
      revision: 1,
      bodyBytes: new TextEncoder().encode(body).length,
      part: { offset, text: body.slice(offset, end) },
      nextCursor: end < body.length ? String(end) : null,
    };
  };
}

describe('reading a long text in parts', () => {
  it('joins the parts into exactly the stored text, whatever the text and the cut points', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(hostileString(300), fc.constant('\ud800'.repeat(2_000)), fc.constant('😀'.repeat(3_000))),
        fc.array(fc.integer({ min: 1, max: 6_000 }), { maxLength: 12 }),
        async (body, cuts) => {
          const progress: number[] = [];
          const read = await readAllParts(partServer(body, cuts), (units) => progress.push(units));
          expect(read).toMatchObject({ status: 'body', text: body });
          expect(progress.at(-1) ?? 0).toBe(body.length);
        },
      ),
    );
  });

  it('reports a body that changed between parts instead of stitching two versions', async () => {
    const parts: MessageReadReply[] = [
      {
        status: 'body',
        messageId: 'm',
        revision: 1,
        bodyBytes: 6,
        part: { offset: 0, text: 'abc' },
        nextCursor: 'k',
      },
      {
        status: 'body',
        messageId: 'm',
        revision: 2,
        bodyBytes: 9,
        part: { offset: 5, text: 'xyz' },
        nextCursor: null,
      },
    ];
    const read = await readAllParts(async () => parts.shift()!);
    expect(read).toEqual({ status: 'state-changed', parts: 1 });
  });

  it('passes on a card that settled while it was being read', async () => {
    const read = await readAllParts(async () => ({ status: 'handed-off', messageId: 'm', state: 'handled' }));
    expect(read).toEqual({ status: 'handed-off', parts: 0 });
  });
});

function message(seq: number, revision = 1, body = `m${seq}`): TimelineMessage {
  return {
    messageId: `id${seq}`,
    seq,
    channelId: 'c1',
    author: { id: 'p1', name: 'owner', kind: 'person' },
    createdAt: '2026-01-01T00:00:00.000Z',
    subject: null,
    replyTo: null,
    replyExcerpt: null,
    body,
    truncated: false,
    bodyBytes: body.length,
    attachments: [],
    revision,
    editedAt: null,
    receipts: [],
    receiptCount: 0,
  };
}

describe('merging history pages and live messages', () => {
  it('keeps one copy per message, oldest first, however pages and events interleave', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 20 }), { maxLength: 8 }),
        (batches) => {
          let merged: TimelineMessage[] = [];
          for (const batch of batches)
            merged = mergeMessages(
              merged,
              batch.map((s) => message(s)),
            );
          const expected = [...new Set(batches.flat())].sort((a, b) => a - b);
          expect(merged.map((m) => m.seq)).toEqual(expected);
        },
      ),
    );
  });

  it('takes an edit’s newer revision and never goes back to an older one', () => {
    const edited = mergeMessages([message(1, 1, 'old')], [message(1, 2, 'new')]);
    expect(edited.map((m) => m.body)).toEqual(['new']);
    expect(mergeMessages(edited, [message(1, 1, 'old')]).map((m) => m.body)).toEqual(['new']);
  });

  it('shows a stub of a new message over the reply budget, and replaces it with the record once read', () => {
    const stub: LiveMessageStub = { messageId: 'id2', seq: 2, bodyBytes: 9_000, truncated: true };
    const shown = mergeStub([message(1), message(3)], stub, false);
    expect(shown.map((m) => (isMessageStub(m) ? 'stub' : m.body))).toEqual(['m1', 'stub', 'm3']);
    // A history page read later (a reconnect) brings the record: it takes the stub's place.
    expect(mergeMessages(shown, [message(2)]).map((m) => (isMessageStub(m) ? 'stub' : m.body))).toEqual([
      'm1',
      'm2',
      'm3',
    ]);
  });

  it('keeps a record over a stub of the same new message, and lets an edit’s stub replace the stale one', () => {
    const stub: LiveMessageStub = { messageId: 'id1', seq: 1, bodyBytes: 9_000, truncated: true };
    expect(mergeStub([message(1)], stub, false)).toEqual([message(1)]);
    expect(mergeMessages<TimelineEntry>([message(1)], [stub])).toEqual([message(1)]);
    expect(mergeStub([message(1)], stub, true)).toEqual([stub]);
  });
});
