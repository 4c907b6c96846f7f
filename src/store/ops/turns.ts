import type { Selectable } from 'kysely';
import { precompile } from '../precompiled.js';
import type { CoverageTable, TurnReceipt, TurnState, TurnsTable } from '../schema.js';
import type { Db } from '../store.js';

export type TurnRow = Selectable<TurnsTable>;
export type CoverageRow = Selectable<CoverageTable>;

// The consume cycle runs these for every turn and every message it covers: built once (precompiled.ts).

const INSERT_TURN = precompile(
  (
    db: Db,
    id: string,
    agentId: string,
    state: TurnState,
    sessionKey: string | null,
    owner: string,
    startedAt: string,
    endedAt: string | null,
    failureKind: string | null,
    reason: string | null,
    receipt: TurnReceipt,
  ) =>
    db.insertInto('turns').values({
      id,
      agent_id: agentId,
      state,
      session_key: sessionKey,
      owner,
      started_at: startedAt,
      ended_at: endedAt,
      failure_kind: failureKind,
      reason,
      receipt,
    }),
);

export async function insertTurn(db: Db, row: TurnRow): Promise<void> {
  await INSERT_TURN.run(
    db,
    row.id,
    row.agent_id,
    row.state,
    row.session_key,
    row.owner,
    row.started_at,
    row.ended_at,
    row.failure_kind,
    row.reason,
    row.receipt,
  );
}

const FIND_TURN = precompile((db: Db, id: string) => db.selectFrom('turns').selectAll().where('id', '=', id));

export function findTurn(db: Db, id: string): Promise<TurnRow | undefined> {
  return FIND_TURN.first(db, id);
}

// No ORDER BY: with one, SQLite walks every turn the agent ever had by turns_by_start instead of
// probing turns_open (agent_id, state); an agent has at most a few open turns to sort here.
const OPEN_TURNS = precompile((db: Db, agentId: string) =>
  db.selectFrom('turns').selectAll().where('agent_id', '=', agentId).where('state', '=', 'open'),
);

/** The agent's open turns, oldest first. */
export async function listOpenTurns(db: Db, agentId: string): Promise<TurnRow[]> {
  const open = await OPEN_TURNS.all(db, agentId);
  return open.sort((a, b) => (a.started_at < b.started_at ? -1 : a.started_at > b.started_at ? 1 : 0));
}

const CLOSE_TURN = precompile(
  (
    db: Db,
    id: string,
    state: TurnState,
    endedAt: string,
    failureKind: string | null,
    reason: string | null,
  ) =>
    db
      .updateTable('turns')
      .set({ state, ended_at: endedAt, failure_kind: failureKind, reason })
      .where('id', '=', id)
      .where('state', '=', 'open'),
);

/** Closes an open turn (an open turn has no failure kind or reason yet: absent ones stay null). */
export async function closeTurn(
  db: Db,
  id: string,
  patch: { state: TurnState; ended_at: string; failure_kind?: string | null; reason?: string | null },
): Promise<void> {
  await CLOSE_TURN.run(db, id, patch.state, patch.ended_at, patch.failure_kind ?? null, patch.reason ?? null);
}

const FIND_COVERAGE = precompile((db: Db, turnId: string, messageSeq: number) =>
  db.selectFrom('coverage').selectAll().where('turn_id', '=', turnId).where('message_seq', '=', messageSeq),
);

export function findCoverage(db: Db, turnId: string, messageSeq: number): Promise<CoverageRow | undefined> {
  return FIND_COVERAGE.first(db, turnId, messageSeq);
}

const UPSERT_COVERAGE = precompile(
  (
    db: Db,
    turnId: string,
    messageSeq: number,
    sha256: string,
    prefixUnits: number,
    totalUnits: number,
    complete: number,
  ) =>
    db
      .insertInto('coverage')
      .values({
        turn_id: turnId,
        message_seq: messageSeq,
        sha256,
        prefix_units: prefixUnits,
        total_units: totalUnits,
        complete,
      })
      .onConflict((oc) =>
        oc.columns(['turn_id', 'message_seq']).doUpdateSet({
          sha256,
          prefix_units: prefixUnits,
          total_units: totalUnits,
          complete,
        }),
      ),
);

export async function upsertCoverage(db: Db, row: CoverageRow): Promise<void> {
  await UPSERT_COVERAGE.run(
    db,
    row.turn_id,
    row.message_seq,
    row.sha256,
    row.prefix_units,
    row.total_units,
    row.complete,
  );
}

/** A turn's coverage of several messages in one statement (a read covers a page of them). */
export async function findCoverages(
  db: Db,
  turnId: string,
  messageSeqs: readonly number[],
): Promise<CoverageRow[]> {
  if (messageSeqs.length === 0) return [];
  if (messageSeqs.length === 1) {
    const row = await findCoverage(db, turnId, messageSeqs[0] as number);
    return row ? [row] : [];
  }
  return COVERAGES.all(db, turnId, [...new Set(messageSeqs)]);
}

// Every read in a turn checks what the turn already holds: built once per list length.
const COVERAGES = precompile((db: Db, turnId: string, seqs: readonly number[]) =>
  db.selectFrom('coverage').selectAll().where('turn_id', '=', turnId).where('message_seq', 'in', seqs),
);

/** {@link upsertCoverage} for several rows in one statement; each message at most once. */
export async function upsertCoverages(db: Db, rows: readonly CoverageRow[]): Promise<void> {
  if (rows.length === 0) return;
  if (rows.length === 1) {
    await upsertCoverage(db, rows[0] as CoverageRow);
    return;
  }
  await UPSERT_COVERAGES.run(
    db,
    rows.map((r) => ({
      turn_id: r.turn_id,
      message_seq: r.message_seq,
      sha256: r.sha256,
      prefix_units: r.prefix_units,
      total_units: r.total_units,
      complete: r.complete,
    })),
  );
}

// Every read in a turn records a page of coverage: built once per count (precompiled.ts).
const UPSERT_COVERAGES = precompile((db: Db, rows: readonly CoverageRow[]) =>
  db
    .insertInto('coverage')
    .values([...rows])
    .onConflict((oc) =>
      oc.columns(['turn_id', 'message_seq']).doUpdateSet((eb) => ({
        sha256: eb.ref('excluded.sha256'),
        prefix_units: eb.ref('excluded.prefix_units'),
        total_units: eb.ref('excluded.total_units'),
        complete: eb.ref('excluded.complete'),
      })),
    ),
);

const LIST_COVERAGE = precompile((db: Db, turnId: string) =>
  db.selectFrom('coverage').selectAll().where('turn_id', '=', turnId).orderBy('message_seq'),
);

export function listCoverage(db: Db, turnId: string): Promise<CoverageRow[]> {
  return LIST_COVERAGE.all(db, turnId);
}

const DELETE_COVERAGE = precompile((db: Db, turnId: string) =>
  db.deleteFrom('coverage').where('turn_id', '=', turnId),
);

export async function deleteCoverage(db: Db, turnId: string): Promise<void> {
  await DELETE_COVERAGE.run(db, turnId);
}
