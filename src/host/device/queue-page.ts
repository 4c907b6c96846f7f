import { type Bounded, boundedJson, fitBoundedList } from '../../core/bounded.js';
import { canonicalFilter } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import type { QueuePageResult } from '../../core/wire/index.js';
import type { QueueRow } from '../../store/ops/queues.js';
import type { MessageSource } from '../../store/schema.js';
import { requireQueueAccess } from '../identity/access.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { issueCursor, QUEUE_PAGE_CURSOR, readCursor } from '../reads/cursors.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, minimalCard, type QueueCard, toCard } from './cards.js';
import {
  firstWindow,
  type PageWindow,
  type StaleReason,
  windowAround,
  windowFromCursor,
} from './page-window.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { QueuePageResult };

/** A page of cards (the other answer is `stale`). */
type QueuePage = Extract<QueuePageResult, { status: 'page' }>;

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
): Promise<Bounded<QueuePageResult>> {
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
    return boundedJson<QueuePageResult>({
      status: 'stale',
      generation: queue.generation,
      revision: queue.revision,
      reason: window,
    });
  }
  return renderPage(ctx, actor, queue, filter, window, budgetBytes);
}

/** The page of the window's cards that fits the budget, keeping the side its window travels to. */
function renderPage(
  ctx: HostContext,
  actor: Principal,
  queue: QueueRow,
  filter: string,
  window: PageWindow,
  budgetBytes: number,
): Bounded<QueuePageResult> {
  const cards = [...window.before, ...window.after].map(toCard);
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
  // The page around the rows [first, end): hasMore and cursors depend on which rows are kept.
  const page = (first: number, end: number): QueuePage => {
    const before = first > 0 || window.beforeMore;
    const after = end < cards.length || window.afterMore;
    return {
      status: 'page',
      generation: queue.generation,
      revision: queue.revision,
      rows: [],
      hasMore: { before, after },
      previousCursor: before && end > first ? cursorFor(cards[first] as QueueCard, 'before') : null,
      nextCursor: after && end > first ? cursorFor(cards[end - 1] as QueueCard, 'after') : null,
    };
  };
  const { text, value } = fitBoundedList({
    rows: cards,
    key: 'rows',
    budgets: { utf8: budgetBytes },
    page,
    // forward keeps the first rows, backward the last, around the anchor (first of `after`).
    keep:
      window.mode === 'forward'
        ? 'prefix'
        : window.mode === 'backward'
          ? 'suffix'
          : { around: window.before.length },
    // Progress (I5): the card that must lead the page is sent without its optional fields.
    oversized: {
      compact: minimalCard,
      refusal: `the reply budget (${budgetBytes} bytes) cannot hold a single card`,
    },
  });
  return { text, value };
}
