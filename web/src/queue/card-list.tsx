import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { formatBytes } from '../media.js';
import { describeError, isTransient, RETRY_AFTER_MS, type RpcClient } from '../rpc.js';
import { shownText } from '../shown-text.js';
import { RelativeTime } from '../time.js';
import type { MessageSource, QueuePageReply, QueueRow } from '../wire.js';
import {
  appendPage,
  cursorAfter,
  cursorBefore,
  prependPage,
  type QueueWindow,
  rowsOf,
  type WindowChange,
  windowFrom,
} from './window.js';

interface CardListProps {
  client: RpcClient;
  agent: string;
  source: MessageSource | undefined;
  /** The summary's revision and generation: when they move on, the visible window is re-read. */
  revision: number | null;
  generation: string | null;
  onOpen: (row: QueueRow) => void;
  /** How the page names each channel the person has (`#team`, `@alice`); others show as "a channel". */
  channelLabels: ReadonlyMap<string, string>;
  /** The line shown when no card is listed (from the summary: queue/empty-state.ts). */
  emptyText: string;
}

/** Every card is this tall, so the list can place only the visible ones (virtualised). */
export const CARD_HEIGHT = 108;
const PAGE_SIZE = 40;
/** The most cards kept loaded; further pages push the far end out. */
const MAX_ROWS = 200;
const OVERSCAN = 4;
/** Rows from either edge at which the neighbouring page is fetched. */
const PREFETCH_ROWS = 8;

/**
 * Where the reader is: the cards in view (the focused one first), each with its top edge relative
 * to the list's visible top. After a re-read the first of them still listed is put back at the
 * same height, so a consumed card above just disappears and a card that went is stepped over.
 */
interface Place {
  cards: { messageId: string; top: number }[];
}

type Load = { kind: 'top' } | { kind: 'around'; place: Place } | { kind: 'after' } | { kind: 'before' };

export function CardList({
  client,
  agent,
  source,
  revision,
  generation,
  onOpen,
  channelLabels,
  emptyText,
}: CardListProps) {
  const [win, setWin] = useState<QueueWindow | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [viewport, setViewport] = useState({ top: 0, height: 600 });
  const scroller = useRef<HTMLDivElement>(null);
  const windowRef = useRef(win);
  windowRef.current = win;
  const busy = useRef(false);
  const retryTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(
    () => () => {
      if (retryTimer.current) clearTimeout(retryTimer.current);
    },
    [],
  );
  // Scroll adjustment to apply once the new window is in the DOM (rows added/dropped above, or an anchor).
  const pendingScroll = useRef<{ delta: number } | { place: Place } | null>(null);
  // The focused card across a re-read: its row may be re-mounted (the visible slice moves with the
  // new window before the scroll is put back), which drops focus; it is given back once rendered.
  const refocus = useRef<string | null>(null);

  const rows = win ? rowsOf(win) : [];
  const refreshRef = useRef<() => void>(() => {});
  const refreshAgain = useRef(false);
  const revisionRef = useRef(revision);
  revisionRef.current = revision;
  const generationRef = useRef(generation);
  generationRef.current = generation;

  /** The message id of the card that has keyboard focus, if one in this list has. */
  const focusedCard = (): string | null => {
    const el = document.activeElement as HTMLElement | null;
    return el && scroller.current?.contains(el) ? (el.dataset.messageId ?? null) : null;
  };

  const placeInView = (): Place | null => {
    const el = scroller.current;
    const current = windowRef.current ? rowsOf(windowRef.current) : [];
    if (!el || current.length === 0) return null;
    const first = Math.min(current.length - 1, Math.floor(el.scrollTop / CARD_HEIGHT));
    const last = Math.min(current.length - 1, Math.floor((el.scrollTop + el.clientHeight) / CARD_HEIGHT));
    const cards = current
      .slice(first, last + 1)
      .map((row, i) => ({ messageId: row.messageId, top: (first + i) * CARD_HEIGHT - el.scrollTop }));
    // The focused card leads: a keyboard user's place is where their focus is.
    const focused = focusedCard();
    const at = cards.findIndex((c) => c.messageId === focused);
    if (at > 0) cards.unshift(...cards.splice(at, 1));
    return { cards };
  };

  const load = useCallback(
    async (what: Load): Promise<void> => {
      if (busy.current) return;
      const current = windowRef.current;
      const params: Record<string, unknown> = { agent, size: PAGE_SIZE };
      if (source) params.source = source;
      if (what.kind === 'around') params.around = what.place.cards[0]!.messageId;
      if (what.kind === 'after') {
        const cursor = current && cursorAfter(current);
        if (!cursor) return;
        params.cursor = cursor;
      }
      if (what.kind === 'before') {
        const cursor = current && cursorBefore(current);
        if (!cursor) return;
        params.cursor = cursor;
      }
      busy.current = true;
      setLoading(true);
      try {
        const reply = await client.call<QueuePageReply>('queue.page', params);
        if (reply.status === 'stale') {
          // The queue was reset, the anchor moved or went, or the cursor no longer matches: start again
          // from the next card in view if there is one, else from the top. Never show a stale page.
          busy.current = false;
          if (what.kind === 'top') throw new Error('the host called a fresh first page stale');
          const place = what.kind === 'around' ? { cards: what.place.cards.slice(1) } : placeInView();
          await load(place && place.cards.length > 0 ? { kind: 'around', place } : { kind: 'top' });
          return;
        }
        setError(null);
        if (what.kind === 'top' || what.kind === 'around' || !current) {
          // Where the reader is now, not when the read was asked: they may have scrolled or tabbed on.
          const place = what.kind === 'around' ? (placeInView() ?? what.place) : null;
          pendingScroll.current = place ? { place } : { delta: -Infinity };
          refocus.current = focusedCard();
          setWin(windowFrom(reply));
          return;
        }
        const change: WindowChange =
          what.kind === 'after'
            ? appendPage(current, reply, MAX_ROWS)
            : prependPage(current, reply, MAX_ROWS);
        pendingScroll.current = { delta: (change.addedBefore - change.droppedBefore) * CARD_HEIGHT };
        setWin(change.window);
      } catch (err) {
        const again = isTransient(err);
        setError(`could not load cards: ${describeError(err)}${again ? '; trying again' : ''}`);
        if (again) {
          if (retryTimer.current) clearTimeout(retryTimer.current);
          retryTimer.current = setTimeout(() => {
            retryTimer.current = null;
            void load(windowRef.current ? what : { kind: 'top' });
          }, RETRY_AFTER_MS);
        }
      } finally {
        busy.current = false;
        setLoading(false);
        if (refreshAgain.current) {
          refreshAgain.current = false;
          setTimeout(() => refreshRef.current(), 0);
        }
      }
    },
    [client, agent, source],
  );

  // First load, and a fresh start whenever the filter changes.
  useEffect(() => {
    // A retry pending for the previous filter is dropped.
    if (retryTimer.current) clearTimeout(retryTimer.current);
    retryTimer.current = null;
    setWin(null);
    windowRef.current = null;
    void load({ kind: 'top' });
  }, [load]);

  // A commit changed the queue: re-read the window where the reader is, so cards that settled,
  // were withdrawn or arrived show without a reload. Coalesced: a burst of commits causes one read,
  // and a change that lands while a page is loading is re-checked when it finishes.
  const refresh = useCallback(() => {
    const current = windowRef.current;
    if (revisionRef.current === null) return;
    if (busy.current) {
      refreshAgain.current = true;
      return;
    }
    // No window yet (the first page failed): the queue moved on, so ask for the top again.
    if (!current) {
      void load({ kind: 'top' });
      return;
    }
    if (current.revision === revisionRef.current && current.generation === generationRef.current) return;
    const place = placeInView();
    void load(place ? { kind: 'around', place } : { kind: 'top' });
  }, [load]);
  refreshRef.current = refresh;

  useEffect(() => {
    const timer = setTimeout(refresh, 150);
    return () => clearTimeout(timer);
  }, [revision, generation, refresh]);

  useLayoutEffect(() => {
    const el = scroller.current;
    const pending = pendingScroll.current;
    pendingScroll.current = null;
    if (!el || !pending || !win) return;
    if ('delta' in pending) {
      el.scrollTop = pending.delta === -Infinity ? 0 : el.scrollTop + pending.delta;
    } else {
      const rows = rowsOf(win);
      for (const card of pending.place.cards) {
        const index = rows.findIndex((r) => r.messageId === card.messageId);
        if (index < 0) continue;
        el.scrollTop = index * CARD_HEIGHT - card.top;
        break;
      }
    }
    setViewport({ top: el.scrollTop, height: el.clientHeight });
  }, [win]);

  useLayoutEffect(() => {
    const id = refocus.current;
    if (!id || !win) return;
    // Focus that moved on elsewhere (not dropped to the page) is the person's choice: left alone.
    const dropped = !document.activeElement || document.activeElement === document.body;
    const card = scroller.current?.querySelector<HTMLElement>(`[data-message-id="${CSS.escape(id)}"]`);
    if (card && dropped) card.focus({ preventScroll: true });
    if (card || !dropped || !rowsOf(win).some((r) => r.messageId === id)) refocus.current = null;
  }, [win, viewport]);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setViewport({ top: el.scrollTop, height: el.clientHeight }));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);

  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    setViewport({ top: el.scrollTop, height: el.clientHeight });
    const current = windowRef.current;
    if (!current) return;
    const count = rowsOf(current).length;
    if (el.scrollTop + el.clientHeight > (count - PREFETCH_ROWS) * CARD_HEIGHT && cursorAfter(current)) {
      void load({ kind: 'after' });
    } else if (el.scrollTop < PREFETCH_ROWS * CARD_HEIGHT && cursorBefore(current)) {
      void load({ kind: 'before' });
    }
  };

  const start = Math.max(0, Math.floor(viewport.top / CARD_HEIGHT) - OVERSCAN);
  const end = Math.min(rows.length, Math.ceil((viewport.top + viewport.height) / CARD_HEIGHT) + OVERSCAN);
  const visible = rows.slice(start, end);

  return (
    <div class="card-list-wrap">
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="card-list" ref={scroller} onScroll={onScroll}>
        {win && rows.length === 0 && <p class="muted pad">{emptyText}</p>}
        {!win && !error && <p class="muted pad">Loading cards…</p>}
        <ul
          class="cards"
          aria-label={`Cards in ${agent}'s queue`}
          aria-busy={loading}
          style={{ height: `${rows.length * CARD_HEIGHT}px` }}
        >
          {visible.map((row, i) => (
            <li
              key={row.messageId}
              class="card-slot"
              style={{ transform: `translateY(${(start + i) * CARD_HEIGHT}px)`, height: `${CARD_HEIGHT}px` }}
            >
              <Card row={row} onOpen={onOpen} channel={channelLabels.get(row.channelId) ?? 'a channel'} />
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}

function Card({ row, onOpen, channel }: { row: QueueRow; onOpen: (row: QueueRow) => void; channel: string }) {
  const senders =
    shownText(row.senderLabels.join(', ')) +
    (row.senderCount > row.senderLabels.length ? ` +${row.senderCount - row.senderLabels.length}` : '');
  return (
    <button
      type="button"
      class={`card state-${row.state}`}
      onClick={() => onOpen(row)}
      data-message-id={row.messageId}
    >
      <span class="card-meta">
        <span class={`badge source-${row.source}`}>{row.source}</span>
        {row.state !== 'waiting' && <span class={`badge state-${row.state}`}>{row.state}</span>}
        <span class="card-sender">{senders || 'unknown sender'}</span>
        <span class="muted small card-channel">in {channel}</span>
        <span class="muted small card-time">
          <RelativeTime iso={row.createdAt} />
        </span>
        <span class="muted small card-size">{formatBytes(row.bodyBytes)}</span>
      </span>
      <span class="card-preview">
        {(row.attachmentCount ?? 0) > 0 && (
          <span class="badge card-attachments" title="attached files">
            {row.attachmentCount} {row.attachmentCount === 1 ? 'file' : 'files'}
          </span>
        )}
        {shownText(row.preview)}
        {row.truncated && '…'}
      </span>
      {row.returnedReason && <span class="card-reason small">Returned: {shownText(row.returnedReason)}</span>}
    </button>
  );
}
