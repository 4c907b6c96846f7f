import type { HostContext } from './context.js';
import { getMessageRow, loadProjections } from './messages.js';
import type { Principal } from './principals.js';
import type { MessageProjection } from './projection.js';

/** A message a delivery carried, as stored now: its keyset seq and current projection. */
export interface CarriedMessage {
  id: string;
  seq: number;
  projection: MessageProjection;
}

/**
 * The messages with these ids as the agent may read them now (membership rechecked, I6), in the
 * order given: what a driver compares with the text it delivered before it counts anything.
 */
export async function carriedMessages(
  ctx: HostContext,
  agent: Principal,
  ids: readonly string[],
): Promise<CarriedMessage[]> {
  const rows = [];
  for (const id of ids) rows.push(await getMessageRow(ctx, agent, id));
  const projections = await loadProjections(ctx.store.db, rows);
  return rows.map((row, i) => ({
    id: row.id,
    seq: Number(row.seq),
    projection: projections[i] as MessageProjection,
  }));
}
