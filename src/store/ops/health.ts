import type { Db } from '../store.js';

/** One cheap read that succeeds only when the database answers (the health check). */
export async function pingDatabase(db: Db): Promise<void> {
  await db.selectFrom('meta').select('key').limit(1).execute();
}
