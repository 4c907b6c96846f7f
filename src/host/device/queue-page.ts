import { canonicalFilter } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import { type FitFrame, fitLargestPrefix } from '../../core/fit.js';
import { jsonAround } from '../../core/json-frame.js';
import { utf8Length } from '../../core/measure.js';
import type { QueuePageResult } from '../../core/wire/index.js';
import type { QueueRow } from '../../store/ops/queues.js';
import type { MessageSource } from '../../store/schema.js';
import { requireQueueAccess } from '../identity/access.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { issueCursor, QUEUE_PAGE_CURSOR, readCursor } from '../reads/cursors.js';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  minimalCard,
  type QueueCard,
  type Rendered,
  toCard,
} from './cards.js';
import {
  firstWindow,
  type PageWindow,
  type StaleReason,
  windowAround,
  windowFromCursor,
} from './page-window.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { QueuePageResult };

export interface QueuePageParams {
  agent: string;
  source?: MessageSource | undefined;
  cursor?: string | undefined;
  /** A message id: the page is centred on that card. */
  around?: string | undefined;
  size?: number | undefined;
}

const pageBinding = (actor: Principal) => ({ caller: actor.id, filter: 'queue.page', target: 'queue' });

/**
 * One page of an agent's pending cards (DESIGN.md §3.3), keyset on position, rows always in FIFO
 * order. The complete JSON text of the result is at most `budgetBytes` UTF-8 bytes: rows are added
 * until the next would overflow, and a first row that alone does not fit is sent with its optional
 * fields dropped and `truncated: true`. A cursor from another generation, filter or agent, or whose
 * boundary card moved or left the queue, gives `{status:"stale"}` — never a misleading empty page.
 */
export async function readQueuePage(
  ctx: HostContext,
  actor: Principal,
  params: QueuePageParams,
  budgetBytes: number,
): Promise<Rendered<QueuePageResult>> {
  const size = params.size ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) {
    throw new SluiceError('invalid_params', `size must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  }
  if (params.cursor !== undefined && params.around !== undefined) {
    throw new SluiceError('invalid_params', 'give either cursor or around, not both');
  }
  const { agent, queue, channelIds } = await requireQueueAccess(ctx, actor, params.agent);
  const filter = canonicalFilter({ source: params.source ?? null });
  const db = ctx.store.db;
  const scope = { agentId: agent.id, channelIds, source: params.source };
  let window: PageWindow | StaleReason;
  if (params.cursor !== undefined) {
    const cursor = readCursor(ctx, QUEUE_PAGE_CURSOR, pageBinding(actor), params.cursor);
    if (cursor.a !== agent.id) window = 'agent';
    else if (cursor.g !== queue.generation) window = 'generation';
    else if (cursor.f !== filter) window = 'filter';
    else window = await windowFromCursor(db, scope, cursor, size);
  } else if (params.around !== undefined) {
    window = await windowAround(db, scope, params.around, size);
  } else {
    window = await firstWindow(db, scope, size);
  }
  if (typeof window === 'string') {
    const result: QueuePageResult = {
      status: 'stale',
      generation: queue.generation,
      revision: queue.revision,
      reason: window,
    };
    return { result, text: JSON.stringify(result) };
  }
  return renderPage(ctx, actor, queue, filter, window, budgetBytes);
}

/** Which of the window's cards the page keeps, [first, end), within the budget. */
function renderPage(
  ctx: HostContext,
  actor: Principal,
  queue: QueueRow,
  filter: string,
  window: PageWindow,
  budgetBytes: number,
): Rendered<QueuePageResult> {
  const cards = [...window.before, ...window.after].map(toCard);
  const serialized = cards.map((c) => JSON.stringify(c));
  const cursorFor = (card: QueueCard, d: 'after' | 'before') =>
    issueCursor(ctx, QUEUE_PAGE_CURSOR, pageBinding(actor), {
      a: queue.agent_id,
      g: queue.generation,
      f: filter,
      d,
      p: card.position,
      m: card.messageId,
      s: card.state,
    });
  // The text around the rows [first, end): hasMore and cursors depend on which rows are kept.
  const frameFor = (list: QueueCard[], first: number, end: number): FitFrame => {
    const before = first > 0 || window.beforeMore;
    const after = end < list.length || window.afterMore;
    const frame = jsonAround(
      {
        status: 'page',
        generation: queue.generation,
        revision: queue.revision,
        rows: [],
        hasMore: { before, after },
        previousCursor: before && end > first ? cursorFor(list[first] as QueueCard, 'before') : null,
        nextCursor: after && end > first ? cursorFor(list[end - 1] as QueueCard, 'after') : null,
      },
      ['rows'],
    );
    return { before: `${frame.before}[`, after: `]${frame.after}` };
  };
  const budgets = { utf8: budgetBytes };
  const keptEnd = (first: number, items: string[], frame: (k: number) => FitFrame) =>
    first + fitLargestPrefix({ items, budgets, frame }).count;

  let first = 0;
  let end = 0;
  if (cards.length > 0) {
    if (window.mode === 'forward') {
      end = keptEnd(0, serialized, (n) => frameFor(cards, 0, n));
    } else if (window.mode === 'backward') {
      // A suffix of the rows is a prefix of the reversed rows, with the same joined length.
      const n = keptEnd(0, [...serialized].reverse(), (k) => frameFor(cards, cards.length - k, cards.length));
      first = cards.length - n;
      end = cards.length;
    } else {
      // Drop earlier rows until the kept prefix reaches the anchor.
      const anchorIndex = window.before.length;
      for (first = 0; first <= anchorIndex; first++) {
        const start = first;
        end = keptEnd(start, serialized.slice(start), (k) => frameFor(cards, start, start + k));
        if (end > anchorIndex) break;
      }
      if (first > anchorIndex) {
        first = anchorIndex;
        end = anchorIndex;
      }
    }
  }
  if (cards.length > 0 && end === first) {
    // Progress (I5): the card that must lead the page is sent without its optional fields.
    const index =
      window.mode === 'backward' ? cards.length - 1 : window.mode === 'around' ? window.before.length : 0;
    const lone = minimalCard(cards[index] as QueueCard);
    const list = cards.slice();
    list[index] = lone;
    const frame = frameFor(list, index, index + 1);
    const text = frame.before + JSON.stringify(lone) + frame.after;
    if (utf8Length(text) > budgetBytes) {
      throw new SluiceError('too_large', `the reply budget (${budgetBytes} bytes) cannot hold a single card`);
    }
    return { result: JSON.parse(text) as QueuePageResult, text };
  }
  const frame = frameFor(cards, first, end);
  const text = frame.before + serialized.slice(first, end).join(',') + frame.after;
  return { result: JSON.parse(text) as QueuePageResult, text };
}
