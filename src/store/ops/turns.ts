import type { Selectable } from 'kysely';
import type { CoverageTable, TurnState, TurnsTable } from '../schema.js';
import type { Db } from '../store.js';

export type TurnRow = Selectable<TurnsTable>;
export type CoverageRow = Selectable<CoverageTable>;

export async function insertTurn(db: Db, row: TurnRow): Promise<void> {
  await db.insertInto('turns').values(row).execute();
}

export async function findTurn(db: Db, id: string): Promise<TurnRow | undefined> {
  return db.selectFrom('turns').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listOpenTurns(db: Db, agentId: string): Promise<TurnRow[]> {
  return db
    .selectFrom('turns')
    .selectAll()
    .where('agent_id', '=', agentId)
    .where('state', '=', 'open')
    .orderBy('started_at')
    .execute();
}

export async function closeTurn(
  db: Db,
  id: string,
  patch: { state: TurnState; ended_at: string; failure_kind?: string | null; reason?: string | null },
): Promise<void> {
  await db.updateTable('turns').set(patch).where('id', '=', id).where('state', '=', 'open').execute();
}

export async function findCoverage(
  db: Db,
  turnId: string,
  messageSeq: number,
): Promise<CoverageRow | undefined> {
  return db
    .selectFrom('coverage')
    .selectAll()
    .where('turn_id', '=', turnId)
    .where('message_seq', '=', messageSeq)
    .executeTakeFirst();
}

export async function upsertCoverage(db: Db, row: CoverageRow): Promise<void> {
  await db
    .insertInto('coverage')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['turn_id', 'message_seq']).doUpdateSet({
        sha256: row.sha256,
        prefix_units: row.prefix_units,
        total_units: row.total_units,
        complete: row.complete,
      }),
    )
    .execute();
}

export async function listCoverage(db: Db, turnId: string): Promise<CoverageRow[]> {
  return db.selectFrom('coverage').selectAll().where('turn_id', '=', turnId).orderBy('message_seq').execute();
}

export async function deleteCoverage(db: Db, turnId: string): Promise<void> {
  await db.deleteFrom('coverage').where('turn_id', '=', turnId).execute();
}
