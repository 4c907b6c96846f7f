import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import { requireWellFormedFields } from '../../core/text.js';
import { appendEvent } from '../../store/ops/events.js';
import { resizePendingEntries } from '../../store/ops/inbox.js';
import { insertRevision, updateMessageContent } from '../../store/ops/messages.js';
import { applyQueueDelta } from '../../store/ops/queues.js';
import { announceCommit, type HostContext, nowIso } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { getMessageRow, validateSend } from './messages.js';

/** Edits a message's body (author only); the old text goes to the revision history for people. */
export async function editMessage(
  ctx: HostContext,
  actor: Principal,
  messageId: string,
  input: { body: string; subject?: string | null },
): Promise<{ message_id: string; revision: number }> {
  validateSend(ctx, { body: input.body });
  requireWellFormedFields({ subject: input.subject });
  if (input.body.trim() === '') throw new SluiceError('invalid_params', 'message body is empty');
  const at = nowIso(ctx);
  const bodyBytes = utf8Length(input.body);
  // The author and membership checks run inside the write's transaction: a removal that commits
  // first refuses the edit, and a removal after it waits for the edit (docs/security.md).
  const edited = await ctx.store.transaction(async (trx) => {
    const row = await getMessageRow(ctx, actor, messageId, trx);
    if (row.author_id !== actor.id) throw new SluiceError('denied', 'only the author can edit a message');
    const revision = row.revision + 1;
    await insertRevision(trx, {
      message_seq: row.seq,
      revision: row.revision,
      body: row.body,
      subject: row.subject,
      edited_at: at,
      edited_by: actor.id,
    });
    await updateMessageContent(trx, row.seq, {
      body: input.body,
      body_bytes: bodyBytes,
      subject: input.subject === undefined ? row.subject : input.subject,
      revision,
      edited_at: at,
    });
    for (const agent_id of await resizePendingEntries(trx, row.seq, bodyBytes, at)) {
      await applyQueueDelta(trx, agent_id, {});
      await appendEvent(trx, { kind: 'queue.changed', agent_id, message_id: row.id, created_at: at });
    }
    await appendEvent(trx, {
      kind: 'message.edited',
      channel_id: row.channel_id,
      message_id: row.id,
      created_at: at,
    });
    return { message_id: row.id, revision };
  });
  announceCommit(ctx);
  return edited;
}
