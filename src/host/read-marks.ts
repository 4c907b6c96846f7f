import { SluiceError } from '../core/errors.js';
import { findMessageById } from '../store/ops/messages.js';
import type { Db } from '../store/store.js';
import { requireMember } from './channels.js';
import { announceCommit, type HostContext, nowIso } from './context.js';
import type { Principal } from './principals.js';

/** How far a principal has read a channel: part of the human presentation record only. */
export interface ReadMark {
  principalId: string;
  lastReadSeq: number;
  updatedAt: string;
}

/**
 * Marks a channel read up to and including `messageId` for the actor. Marks only move forward:
 * marking an older message keeps the newer mark. Never touches any inbox (I3).
 */
export async function markRead(
  ctx: HostContext,
  actor: Principal,
  messageId: string,
): Promise<{ channelId: string; lastReadSeq: number }> {
  const message = typeof messageId === 'string' ? await findMessageById(ctx.store.db, messageId) : undefined;
  if (!message || message.deleted_at !== null) {
    throw new SluiceError('not_found', `no message ${JSON.stringify(String(messageId)).slice(0, 80)}`);
  }
  await requireMember(ctx.store.db, message.channel_id, actor.id);
  const at = nowIso(ctx);
  const seq = Number(message.seq);
  const lastReadSeq = await ctx.store.transaction(async (trx) => {
    await trx
      .insertInto('read_marks')
      .values({ channel_id: message.channel_id, principal_id: actor.id, last_read_seq: seq, updated_at: at })
      .onConflict((oc) =>
        oc
          .columns(['channel_id', 'principal_id'])
          .doUpdateSet({ last_read_seq: seq, updated_at: at })
          .where('read_marks.last_read_seq', '<', seq),
      )
      .execute();
    const row = await trx
      .selectFrom('read_marks')
      .select('last_read_seq')
      .where('channel_id', '=', message.channel_id)
      .where('principal_id', '=', actor.id)
      .executeTakeFirstOrThrow();
    return Number(row.last_read_seq);
  });
  announceCommit(ctx);
  return { channelId: message.channel_id, lastReadSeq };
}

/** The read marks of a channel's members, most advanced first, at most `limit`. */
export async function listReadMarks(db: Db, channelId: string, limit: number): Promise<ReadMark[]> {
  const rows = await db
    .selectFrom('read_marks')
    .select(['principal_id', 'last_read_seq', 'updated_at'])
    .where('channel_id', '=', channelId)
    .orderBy('last_read_seq', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    principalId: r.principal_id,
    lastReadSeq: Number(r.last_read_seq),
    updatedAt: r.updated_at,
  }));
}
