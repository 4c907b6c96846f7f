import { sha256Hex } from '../../core/fragment.js';
import type { HostContext } from '../context.js';
import type { RenderedFrom } from '../delivery.js';
import { getMessageRow, loadProjections } from '../messages.js';
import type { Principal } from '../principals.js';
import { type AttachmentRef, type MessageProjection, projectionText } from '../projection.js';
import type { CoverageRead } from './coverage.js';

/** A message a turn carries: its projection and the attachments to materialise for the client. */
export interface DeliveredMessage {
  id: string;
  projection: MessageProjection;
  attachments: AttachmentRef[];
}

/** A message a delivery carried, as stored now: its keyset seq and current projection. */
interface CarriedMessage {
  id: string;
  seq: number;
  projection: MessageProjection;
}

/**
 * The messages with these ids as the agent may read them now (membership rechecked, I6), in the
 * order given: what a turn compares with what it showed the client before it counts anything.
 */
async function carriedMessages(
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

/**
 * The messages a slice (a turn's delivery or a steer) carries whole, as they are now, with the coverage each one would record.
 * A message whose projection changed between rendering and now (an edit) is left out: the model
 * never saw this version, so it is not covered and stays pending. The comparison is of data (the
 * projection the text was rendered from), never of the rendered text read back.
 */
export async function carriedWhole(
  ctx: HostContext,
  agent: Principal,
  slice: RenderedFrom,
): Promise<{ reads: CoverageRead[]; delivered: DeliveredMessage[] }> {
  const reads: CoverageRead[] = [];
  const delivered: DeliveredMessage[] = [];
  for (const now of await carriedMessages(ctx, agent, slice.delivery.included)) {
    const shown = slice.projections.get(now.id);
    if (!shown) continue;
    const text = projectionText(now.projection);
    if (text !== projectionText(shown)) continue;
    reads.push({
      messageSeq: now.seq,
      sha256: sha256Hex(text),
      offset: 0,
      end: text.length,
      total: text.length,
    });
    delivered.push({ id: now.id, projection: now.projection, attachments: now.projection.attachments });
  }
  return { reads, delivered };
}
