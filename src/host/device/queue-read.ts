import { type Bounded, boundedJson } from '../../core/bounded.js';
import { type CursorBinding, canonicalFilter } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import { isPendingState } from '../../core/pending.js';
import { quoteInput } from '../../core/text.js';
import type { BodyStatus, QueueReadResult } from '../../core/wire/index.js';
import { queuedBody } from '../../store/ops/queue-pages.js';
import { requireQueueAccess } from '../identity/access.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { BODY_PART_CURSOR, issueCursor, readCursor } from '../reads/cursors.js';
import { renderBodyPart } from './body-parts.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { BodyStatus, QueueReadResult };

/**
 * The exact stored body of a pending card, in parts: each complete result text fits
 * `budgetBytes`, parts never split a surrogate pair and joined in order they equal the body.
 * A card that settled says so (`handed-off` once the agent consumed it, `gone` once withdrawn or
 * archived), and a body edited since the cursor was issued is `state-changed`.
 */
export async function readQueueBody(
  ctx: HostContext,
  actor: Principal,
  params: { agent: string; messageId: string; cursor?: string | undefined },
  budgetBytes: number,
): Promise<Bounded<QueueReadResult>> {
  const { agent, channelIds } = await requireQueueAccess(ctx, actor, params.agent);
  const row = await queuedBody(ctx.store.db, agent.id, params.messageId);
  if (!row || !channelIds.includes(row.channel_id)) {
    throw new SluiceError('not_found', `no message ${quoteInput(params.messageId)} in ${agent.name}'s queue`);
  }
  const settled = (status: BodyStatus) =>
    boundedJson<QueueReadResult>({ status, messageId: params.messageId, state: row.state });
  if (row.state === 'handled') return settled('handed-off');
  if (!isPendingState(row.state) || row.deleted_at !== null) return settled('gone');
  const binding: CursorBinding = {
    caller: actor.id,
    filter: canonicalFilter({ method: 'queue.read', agent: agent.id }),
    target: params.messageId,
  };
  let offset = 0;
  if (params.cursor !== undefined) {
    const cursor = readCursor(ctx, BODY_PART_CURSOR, binding, params.cursor);
    if (cursor.r !== row.revision) return settled('state-changed');
    offset = cursor.o;
  }
  const bodyBytes = utf8Length(row.body);
  return renderBodyPart<QueueReadResult>({
    body: row.body,
    offset,
    budgetBytes,
    path: ['part', 'text'],
    result: (part, next) => ({
      status: 'body',
      messageId: params.messageId,
      bodyBytes,
      part: { offset, text: part },
      nextCursor:
        next === null ? null : issueCursor(ctx, BODY_PART_CURSOR, binding, { o: next, r: row.revision }),
    }),
  });
}
