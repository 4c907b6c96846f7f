import type { Db } from '../store.js';

export async function getMeta(db: Db, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value;
}

/** Sets `key` only when absent; returns the value that is stored afterwards. */
export async function setMetaIfAbsent(db: Db, key: string, value: string): Promise<string> {
  await db
    .insertInto('meta')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  return (await getMeta(db, key)) as string;
}

/** Sets `key` to `value`, replacing what was there. */
export async function setMeta(db: Db, key: string, value: string): Promise<void> {
  await db
    .insertInto('meta')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
    .execute();
}
