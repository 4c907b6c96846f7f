import type { Db } from '../store.js';

/** The newest upload time (ms since epoch) of each blob digest that has upload rows. */
export async function newestUploadBySha(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('media')
    .select((eb) => ['sha256', eb.fn.max('created_at').as('newest')])
    .groupBy('sha256')
    .execute();
  return new Map(rows.map((r) => [r.sha256, Date.parse(String(r.newest))]));
}

/**
 * Deletes the upload rows of a blob unless a message references it by now; false when one does.
 * Run it in the write transaction that decides the blob's fate, so a racing send wins.
 */
export async function forgetUnreferencedUploads(db: Db, sha256: string): Promise<boolean> {
  const used = await db
    .selectFrom('message_media')
    .innerJoin('media', 'media.id', 'message_media.media_id')
    .select('media.id')
    .where('media.sha256', '=', sha256)
    .limit(1)
    .executeTakeFirst();
  if (used) return false;
  await db.deleteFrom('media').where('sha256', '=', sha256).execute();
  return true;
}
