import { type CursorBinding, canonicalFilter } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import { messagesKeyedBySeq } from '../../store/ops/reads.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { assemblePage, pageKey, readableChannels } from './page.js';
import {
  type ChannelSearchParams,
  DEFAULT_PAGE_LIMIT,
  MAX_QUERY_UNITS,
  type PageResult,
  type ReadOutcome,
  requireNonEmptyStrings,
  validateLimit,
} from './params.js';

/**
 * `channel_search`: full-text matches, newest first, in the channels the caller belongs to now
 * (or one of them), in the same page shape and budget as `channel_read`.
 */
export async function channelSearch(
  ctx: HostContext,
  agent: Principal,
  params: ChannelSearchParams,
): Promise<ReadOutcome<PageResult>> {
  if (typeof params.query !== 'string' || params.query.trim() === '') {
    throw new SluiceError('invalid_params', 'query must be a non-empty string');
  }
  if (params.query.length > MAX_QUERY_UNITS) {
    throw new SluiceError('invalid_params', `query must be at most ${MAX_QUERY_UNITS} characters`);
  }
  requireNonEmptyStrings(params, ['channel_id', 'cursor']);
  validateLimit(params.limit);
  const limit = params.limit ?? DEFAULT_PAGE_LIMIT;
  const db = ctx.store.db;
  const channelIds = await readableChannels(db, agent, params.channel_id);
  const binding: CursorBinding = {
    caller: agent.id,
    filter: canonicalFilter({
      tool: 'channel_search',
      query: params.query,
      channel_id: params.channel_id ?? null,
    }),
    target: 'search',
  };
  const before = params.cursor === undefined ? undefined : pageKey(ctx, binding, params.cursor);
  const seqs = await ctx.store.searchIndex.search(db, {
    query: params.query,
    channelIds,
    ...(before !== undefined ? { beforeSeq: before } : {}),
    limit: limit + 1,
  });
  return assemblePage(ctx, agent, await messagesKeyedBySeq(db, seqs), limit, binding);
}
