import { precompile } from '../precompiled.js';
import type { Db } from '../store.js';

/** Whether the person manages the agent (primary-key probe). */
export async function isAgentManager(db: Db, agentId: string, personId: string): Promise<boolean> {
  const row = await db
    .selectFrom('agent_managers')
    .select('person_id')
    .where('agent_id', '=', agentId)
    .where('person_id', '=', personId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Records a manager; a repeated one keeps the first. */
export async function insertAgentManager(
  db: Db,
  row: { agent_id: string; person_id: string; created_at: string },
): Promise<void> {
  await db
    .insertInto('agent_managers')
    .values(row)
    .onConflict((oc) => oc.columns(['agent_id', 'person_id']).doNothing())
    .execute();
}

/** Removes a manager; true when the person was one. */
export async function deleteAgentManager(db: Db, agentId: string, personId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('agent_managers')
    .where('agent_id', '=', agentId)
    .where('person_id', '=', personId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** An agent's managers by name (a handful per agent: not paged). */
export async function listAgentManagers(
  db: Db,
  agentId: string,
): Promise<{ name: string; created_at: string }[]> {
  return db
    .selectFrom('agent_managers')
    .innerJoin('principals', 'principals.id', 'agent_managers.person_id')
    .select(['principals.name as name', 'agent_managers.created_at as created_at'])
    .where('agent_managers.agent_id', '=', agentId)
    .orderBy('principals.name')
    .execute();
}

/** The ids of an agent's managers (for live pushes: who may watch its queue). */
export async function listAgentManagerIds(db: Db, agentId: string): Promise<string[]> {
  const rows = await MANAGER_IDS.all(db, agentId);
  return rows.map((r) => r.person_id);
}

// Every page a model reads names who manages it (provenance): built once (precompiled.ts).
const MANAGER_IDS = precompile((db: Db, agentId: string) =>
  db.selectFrom('agent_managers').select('person_id').where('agent_id', '=', agentId),
);

/** One page of the agents a person manages, by name, strictly after `after`. */
export async function listManagedAgents(
  db: Db,
  personId: string,
  options: { after?: string | undefined; limit: number },
): Promise<{ id: string; name: string; kind: 'agent' }[]> {
  let q = db
    .selectFrom('agent_managers')
    .innerJoin('principals', 'principals.id', 'agent_managers.agent_id')
    .select(['principals.id as id', 'principals.name as name'])
    .where('agent_managers.person_id', '=', personId)
    .orderBy('principals.name')
    .limit(options.limit);
  if (options.after !== undefined) q = q.where('principals.name', '>', options.after);
  return (await q.execute()).map((r) => ({ id: r.id, name: r.name, kind: 'agent' as const }));
}
