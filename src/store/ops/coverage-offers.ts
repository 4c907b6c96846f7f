import type { Selectable } from 'kysely';
import { precompile } from '../precompiled.js';
import type { CoverageOffersTable } from '../schema.js';
import type { Db } from '../store.js';

export type CoverageOfferRow = Selectable<CoverageOffersTable>;

/** Stores a read's offered coverage; offering the same result text again changes nothing. */
export async function insertCoverageOffers(db: Db, rows: readonly CoverageOfferRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('coverage_offers')
    .values([...rows])
    .onConflict((oc) => oc.columns(['turn_id', 'result_sha256', 'message_seq']).doNothing())
    .execute();
}

/** The coverage a result text offered in a turn, in message order. */
export async function findCoverageOffers(
  db: Db,
  turnId: string,
  resultSha256: string,
): Promise<CoverageOfferRow[]> {
  return db
    .selectFrom('coverage_offers')
    .selectAll()
    .where('turn_id', '=', turnId)
    .where('result_sha256', '=', resultSha256)
    .orderBy('message_seq')
    .execute();
}

/** Forgets one result's offers (confirmed), or every offer of a turn (settled or abandoned). */
export async function deleteCoverageOffers(db: Db, turnId: string, resultSha256?: string): Promise<void> {
  if (resultSha256 === undefined) await DELETE_TURN_OFFERS.run(db, turnId);
  else await DELETE_RESULT_OFFERS.run(db, turnId, resultSha256);
}

// Every settled or abandoned turn runs these: built once (precompiled.ts).
const DELETE_TURN_OFFERS = precompile((db: Db, turnId: string) =>
  db.deleteFrom('coverage_offers').where('turn_id', '=', turnId),
);
const DELETE_RESULT_OFFERS = precompile((db: Db, turnId: string, resultSha256: string) =>
  db.deleteFrom('coverage_offers').where('turn_id', '=', turnId).where('result_sha256', '=', resultSha256),
);
