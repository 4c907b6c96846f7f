// Who drives each agent now (migration 024): one row per driven agent, written only by its holder
// (or by a driver taking over a holder that is gone). The rules live in host/agents/driver-lock.ts.
import type { Selectable } from 'kysely';
import type { AgentDriversTable } from '../schema.js';
import type { Db } from '../store.js';

export type AgentDriverRow = Selectable<AgentDriversTable>;

export async function findAgentDriver(db: Db, agentId: string): Promise<AgentDriverRow | undefined> {
  return db.selectFrom('agent_drivers').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
}

/** Inserts the row unless the agent already has one; true when it was inserted. */
export async function insertAgentDriver(db: Db, row: AgentDriverRow): Promise<boolean> {
  const result = await db
    .insertInto('agent_drivers')
    .values(row)
    .onConflict((oc) => oc.column('agent_id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/**
 * Replaces the row of a holder that is gone, only while `previousHolder` still holds it (so two
 * drivers taking over the same stale row cannot both succeed); true when it was replaced.
 */
export async function replaceAgentDriver(
  db: Db,
  row: AgentDriverRow,
  previousHolder: string,
): Promise<boolean> {
  const { agent_id, ...fields } = row;
  const result = await db
    .updateTable('agent_drivers')
    .set(fields)
    .where('agent_id', '=', agent_id)
    .where('holder', '=', previousHolder)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Extends the holder's lease; false when `holder` no longer holds the agent. */
export async function renewAgentDriver(
  db: Db,
  agentId: string,
  holder: string,
  until: string,
): Promise<boolean> {
  const result = await db
    .updateTable('agent_drivers')
    .set({ held_until: until })
    .where('agent_id', '=', agentId)
    .where('holder', '=', holder)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Removes the holder's row; false when it held none (it was taken over, or never written). */
export async function deleteAgentDriver(db: Db, agentId: string, holder: string): Promise<boolean> {
  const result = await db
    .deleteFrom('agent_drivers')
    .where('agent_id', '=', agentId)
    .where('holder', '=', holder)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
