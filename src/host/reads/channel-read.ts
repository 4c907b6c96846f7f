import { type CursorBinding, canonicalFilter } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import type { FragmentResult } from '../../core/fragment.js';
import { findQueue } from '../../store/ops/queues.js';
import { channelMessagesBefore, pendingMessagesAfter } from '../../store/ops/reads.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { requireAgent } from '../queue/inbox.js';
import { readMessage } from './message.js';
import { assemblePage, pageKey, readableChannels } from './page.js';
import {
  type ChannelReadParams,
  DEFAULT_PAGE_LIMIT,
  type PageResult,
  type ReadOutcome,
  requireNonEmptyStrings,
  validateLimit,
} from './params.js';

/**
 * `channel_read`: an unread (FIFO) or history (newest-first) page, or one message by `message_id`
 * (whole when it fits, else fragments via `content_cursor`). Rechecks the caller's current
 * membership on every call. In the agent's open turn the outcome carries a receipt for what the
 * result holds whole (pages) or the slice it holds (fragments); nothing counts until the surface
 * confirms the result reached the client. With no open turn it is a peek.
 */
export async function channelRead(
  ctx: HostContext,
  agent: Principal,
  params: ChannelReadParams,
): Promise<ReadOutcome<PageResult | FragmentResult>> {
  validateReadParams(params);
  if (params.message_id !== undefined) return readMessage(ctx, agent, params);
  const unread = params.unread ?? params.channel_id === undefined;
  const limit = params.limit ?? DEFAULT_PAGE_LIMIT;
  return unread
    ? readUnreadPage(ctx, agent, params.channel_id, params.cursor, limit)
    : readHistoryPage(ctx, agent, params.channel_id, params.cursor, limit);
}

function validateReadParams(params: ChannelReadParams): void {
  requireNonEmptyStrings(params, ['channel_id', 'cursor', 'message_id', 'content_cursor']);
  if (params.unread !== undefined && typeof params.unread !== 'boolean') {
    throw new SluiceError('invalid_params', 'unread must be true or false');
  }
  validateLimit(params.limit);
  if (params.message_id !== undefined) {
    if (params.cursor !== undefined || params.limit !== undefined || params.unread !== undefined) {
      throw new SluiceError(
        'invalid_params',
        'message_id reads one message: use content_cursor to continue it, not cursor, limit or unread',
      );
    }
  } else if (params.content_cursor !== undefined) {
    throw new SluiceError('invalid_params', 'content_cursor needs the message_id it was returned with');
  }
}

async function readUnreadPage(
  ctx: HostContext,
  agent: Principal,
  channelId: string | undefined,
  cursor: string | undefined,
  limit: number,
): Promise<ReadOutcome<PageResult>> {
  requireAgent(agent);
  const db = ctx.store.db;
  const channelIds = await readableChannels(db, agent, channelId);
  const queue = await findQueue(db, agent.id);
  // The generation is the target: a cursor from before a queue reset is stale.
  const binding: CursorBinding = {
    caller: agent.id,
    filter: canonicalFilter({ tool: 'channel_read', unread: true, channel_id: channelId ?? null }),
    target: `queue:${queue?.generation ?? ''}`,
  };
  const after = cursor === undefined ? 0 : pageKey(ctx, binding, cursor);
  const rows = await pendingMessagesAfter(db, agent.id, channelIds, after, limit + 1);
  return assemblePage(ctx, agent, rows, limit, binding);
}

async function readHistoryPage(
  ctx: HostContext,
  agent: Principal,
  channelId: string | undefined,
  cursor: string | undefined,
  limit: number,
): Promise<ReadOutcome<PageResult>> {
  const db = ctx.store.db;
  const channelIds = await readableChannels(db, agent, channelId);
  const binding: CursorBinding = {
    caller: agent.id,
    filter: canonicalFilter({ tool: 'channel_read', unread: false, channel_id: channelId ?? null }),
    target: 'history',
  };
  const before = cursor === undefined ? undefined : pageKey(ctx, binding, cursor);
  const rows = await channelMessagesBefore(db, channelIds, before, limit + 1);
  return assemblePage(ctx, agent, rows, limit, binding);
}
