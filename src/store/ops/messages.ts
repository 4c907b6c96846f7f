import type { Selectable } from 'kysely';
import { precompile } from '../precompiled.js';
import type { MessageRevisionsTable, MessagesTable } from '../schema.js';
import { type Db, dialectOf } from '../store.js';

export type MessageRow = Selectable<MessagesTable>;

export async function findMessageById(db: Db, id: string): Promise<MessageRow | undefined> {
  return db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * {@link findMessageById} for a change decided on the row (an edit's next revision): inside a
 * PostgreSQL write transaction the row is read FOR UPDATE, so two edits side by side take turns
 * (SQLite's BEGIN IMMEDIATE already serialises writers).
 */
export async function findMessageForChange(db: Db, id: string): Promise<MessageRow | undefined> {
  const query = db.selectFrom('messages').selectAll().where('id', '=', id);
  const locked = db.isTransaction && dialectOf(db).locksRowsRead;
  return (locked ? query.forUpdate() : query).executeTakeFirst();
}

/** Messages by seq, in the order of `seqs`. */
export async function findMessagesBySeqs(db: Db, seqs: readonly number[]): Promise<MessageRow[]> {
  if (seqs.length === 0) return [];
  const rows = await MESSAGES_BY_SEQS.all(db, seqs);
  const bySeq = new Map(rows.map((r) => [Number(r.seq), r]));
  return seqs.flatMap((s) => bySeq.get(s) ?? []);
}

// Every page and every settle looks its messages up: built once per list length (precompiled.ts).
const MESSAGES_BY_SEQS = precompile((db: Db, seqs: readonly number[]) =>
  db.selectFrom('messages').selectAll().where('seq', 'in', seqs),
);

/** Keyset page of one channel's history, newest first. */
export async function listChannelHistory(
  db: Db,
  channelId: string,
  options: {
    beforeSeq?: number | undefined;
    afterSeq?: number | undefined;
    limit: number;
    newestFirst?: boolean;
  },
): Promise<MessageRow[]> {
  let q = db
    .selectFrom('messages')
    .selectAll()
    .where('channel_id', '=', channelId)
    .where('deleted_at', 'is', null);
  if (options.beforeSeq !== undefined) q = q.where('seq', '<', options.beforeSeq);
  if (options.afterSeq !== undefined) q = q.where('seq', '>', options.afterSeq);
  return q
    .orderBy('seq', options.newestFirst === false ? 'asc' : 'desc')
    .limit(options.limit)
    .execute();
}

export async function updateMessageContent(
  db: Db,
  seq: number,
  patch: { body: string; body_bytes: number; subject: string | null; revision: number; edited_at: string },
): Promise<void> {
  await db.updateTable('messages').set(patch).where('seq', '=', seq).execute();
}

export async function insertRevision(db: Db, row: Selectable<MessageRevisionsTable>): Promise<void> {
  await db.insertInto('message_revisions').values(row).execute();
}
