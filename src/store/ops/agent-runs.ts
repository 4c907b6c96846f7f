import type { Selectable } from 'kysely';
import type { AgentRunsTable } from '../schema.js';
import type { Db } from '../store.js';

export type AgentRunRow = Selectable<AgentRunsTable>;

/** A run spec with its agent's name (listings, the supervisor). */
export type NamedAgentRunRow = AgentRunRow & { name: string };

/** What `sluice agent run` registers; a spec registered again replaces what to run and where. */
export interface AgentRunSpec {
  agent_id: string;
  driver: 'claude' | 'codex';
  cwd: string;
  args: string;
  machine: string;
  home: string;
  created_by: string;
  at: string;
}

/**
 * Inserts the spec (desired `running`), or replaces driver, folder, args and place of an existing
 * one, asks for it to run, and bumps `restart_seq` so a running driver restarts with the new spec.
 * A spec that moves to another machine or home leaves its old host: the lease and what that host
 * reported are cleared, so the old host stops its driver on its next look and the new place's host
 * may take the spec at once. Run it in a transaction (the two writes go together).
 */
export async function upsertAgentRun(db: Db, spec: AgentRunSpec): Promise<void> {
  const { at, ...fields } = spec;
  await db
    .updateTable('agent_runs')
    .set({ holder: null, held_until: null, state: 'stopped', pid: null, model_error: null, state_at: at })
    .where('agent_id', '=', spec.agent_id)
    .where((eb) => eb.or([eb('machine', '<>', spec.machine), eb('home', '<>', spec.home)]))
    .execute();
  await db
    .insertInto('agent_runs')
    .values({ ...fields, desired: 'running', created_at: at, updated_at: at })
    .onConflict((oc) =>
      oc.column('agent_id').doUpdateSet((eb) => ({
        driver: spec.driver,
        cwd: spec.cwd,
        args: spec.args,
        machine: spec.machine,
        home: spec.home,
        desired: 'running',
        restart_seq: eb('agent_runs.restart_seq', '+', 1),
        updated_at: at,
      })),
    )
    .execute();
}

export async function findAgentRun(db: Db, agentId: string): Promise<AgentRunRow | undefined> {
  return db.selectFrom('agent_runs').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
}

/** Every spec with its agent's name, by name (a host runs a handful: not paged). */
export async function listAgentRuns(db: Db): Promise<NamedAgentRunRow[]> {
  return db
    .selectFrom('agent_runs')
    .innerJoin('principals', 'principals.id', 'agent_runs.agent_id')
    .selectAll('agent_runs')
    .select('principals.name as name')
    .orderBy('principals.name')
    .execute();
}

/** Sets what the managers asked for; `restart` also bumps `restart_seq`. False when there is no spec. */
export async function setAgentRunDesired(
  db: Db,
  agentId: string,
  desired: 'running' | 'stopped',
  at: string,
  restart = false,
): Promise<boolean> {
  const result = await db
    .updateTable('agent_runs')
    .set((eb) => ({
      desired,
      updated_at: at,
      ...(restart ? { restart_seq: eb('restart_seq', '+', 1) } : {}),
    }))
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Removes a spec; true when there was one. */
export async function deleteAgentRun(db: Db, agentId: string): Promise<boolean> {
  const result = await db.deleteFrom('agent_runs').where('agent_id', '=', agentId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * Takes (or renews) the lease on every spec of this machine and home that nobody else holds, or
 * whose holder let its lease lapse (a host that died), and returns the specs `holder` now holds.
 * Run in a transaction: two hosts never both hold one.
 */
export async function claimAgentRuns(
  db: Db,
  claim: { holder: string; machine: string; home: string; now: string; until: string },
): Promise<NamedAgentRunRow[]> {
  await db
    .updateTable('agent_runs')
    .set({ holder: claim.holder, held_until: claim.until })
    .where('machine', '=', claim.machine)
    .where('home', '=', claim.home)
    .where((eb) =>
      eb.or([
        eb('holder', 'is', null),
        eb('holder', '=', claim.holder),
        eb('held_until', 'is', null),
        eb('held_until', '<', claim.now),
      ]),
    )
    .execute();
  return (
    db
      .selectFrom('agent_runs')
      .innerJoin('principals', 'principals.id', 'agent_runs.agent_id')
      .selectAll('agent_runs')
      .select('principals.name as name')
      .where('holder', '=', claim.holder)
      // Only this machine's and home's: a row that names this holder for another place is not its to
      // run (a spec moved elsewhere; upsertAgentRun clears the holder, this keeps a host honest anyway).
      .where('machine', '=', claim.machine)
      .where('home', '=', claim.home)
      .orderBy('principals.name')
      .execute()
  );
}

/** What a supervisor reports of one run; written only while `holder` holds its lease. */
export interface AgentRunReport {
  state: 'starting' | 'running' | 'stopped' | 'crashed';
  pid: number | null;
  last_error?: string | null;
  model_error?: string | null;
  restarts?: number;
  state_at: string;
}

export async function reportAgentRun(
  db: Db,
  agentId: string,
  holder: string,
  report: AgentRunReport,
): Promise<boolean> {
  const result = await db
    .updateTable('agent_runs')
    .set(report)
    .where('agent_id', '=', agentId)
    .where('holder', '=', holder)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Records the model error the running driver reported (null: a turn succeeded), while `holder`
 * holds the lease. The state and its time stay: the driver runs on.
 */
export async function reportAgentRunModelError(
  db: Db,
  agentId: string,
  holder: string,
  modelError: string | null,
): Promise<boolean> {
  const result = await db
    .updateTable('agent_runs')
    .set({ model_error: modelError })
    .where('agent_id', '=', agentId)
    .where('holder', '=', holder)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A supervisor shutting down: its runs are stopped and free for the next host. */
export async function releaseAgentRuns(db: Db, holder: string, at: string): Promise<void> {
  await db
    .updateTable('agent_runs')
    .set({ holder: null, held_until: null, state: 'stopped', pid: null, model_error: null, state_at: at })
    .where('holder', '=', holder)
    .execute();
}
