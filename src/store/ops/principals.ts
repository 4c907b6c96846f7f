import type { Selectable } from 'kysely';
import { precompile } from '../precompiled.js';
import type { PrincipalKind, PrincipalsTable, SettlementMode } from '../schema.js';
import type { Db } from '../store.js';

export type PrincipalRow = Selectable<PrincipalsTable>;

export async function insertPrincipal(db: Db, row: PrincipalRow): Promise<void> {
  await db.insertInto('principals').values(row).execute();
}

export async function findPrincipalByName(db: Db, name: string): Promise<PrincipalRow | undefined> {
  return db.selectFrom('principals').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function findPrincipalById(db: Db, id: string): Promise<PrincipalRow | undefined> {
  return db.selectFrom('principals').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findPrincipalsByIds(db: Db, ids: readonly string[]): Promise<PrincipalRow[]> {
  if (ids.length === 0) return [];
  return PRINCIPALS_BY_IDS.all(db, ids);
}

// Every page names its senders: built once per list length (precompiled.ts).
const PRINCIPALS_BY_IDS = precompile((db: Db, ids: readonly string[]) =>
  db.selectFrom('principals').selectAll().where('id', 'in', ids),
);

export async function listPrincipals(db: Db, kind?: PrincipalKind): Promise<PrincipalRow[]> {
  let q = db.selectFrom('principals').selectAll().orderBy('name');
  if (kind) q = q.where('kind', '=', kind);
  return q.execute();
}

export async function updateSettlement(db: Db, id: string, settlement: SettlementMode): Promise<void> {
  await db.updateTable('principals').set({ settlement }).where('id', '=', id).execute();
}
