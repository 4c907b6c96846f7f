import type { Selectable } from 'kysely';
import type { MediaTable } from '../schema.js';
import type { Db } from '../store.js';

export type MediaRow = Selectable<MediaTable>;

export async function insertMedia(db: Db, row: MediaRow): Promise<void> {
  await db.insertInto('media').values(row).execute();
}

export async function findMedia(db: Db, id: string): Promise<MediaRow | undefined> {
  return db.selectFrom('media').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findMediaByIds(db: Db, ids: readonly string[]): Promise<MediaRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('media').selectAll().where('id', 'in', ids).execute();
}

export async function linkMessageMedia(
  db: Db,
  messageSeq: number,
  mediaIds: readonly string[],
): Promise<void> {
  if (mediaIds.length === 0) return;
  await db
    .insertInto('message_media')
    .values(mediaIds.map((media_id) => ({ message_seq: messageSeq, media_id })))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Channels whose messages reference this media id (for download access checks). */
export async function channelsReferencingMedia(db: Db, mediaId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('message_media')
    .innerJoin('messages', 'messages.seq', 'message_media.message_seq')
    .select('messages.channel_id')
    .distinct()
    .where('message_media.media_id', '=', mediaId)
    .execute();
  return rows.map((r) => r.channel_id);
}

/** Every blob digest that some message references. */
export async function referencedBlobShas(db: Db): Promise<Set<string>> {
  const rows = await db
    .selectFrom('message_media')
    .innerJoin('media', 'media.id', 'message_media.media_id')
    .select('media.sha256')
    .distinct()
    .execute();
  return new Set(rows.map((r) => r.sha256));
}

/**
 * Deletes the upload rows `ids` that `createdBy` made and that no message links (an id a message
 * holds is never touched). Their bytes stay: a blob is shared by every upload of the same bytes,
 * and `media gc` removes one nothing references once it is old enough.
 */
export async function deleteUnlinkedUploads(
  db: Db,
  ids: readonly string[],
  createdBy: string,
): Promise<void> {
  if (ids.length === 0) return;
  await db
    .deleteFrom('media')
    .where('id', 'in', ids)
    .where('created_by', '=', createdBy)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('message_media').select('media_id').whereRef('message_media.media_id', '=', 'media.id'),
        ),
      ),
    )
    .execute();
}
