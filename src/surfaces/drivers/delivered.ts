import type { RenderedDelivery } from '../../core/envelope.js';
import { sha256Hex } from '../../core/fragment.js';
import type { HostContext } from '../../host/context.js';
import { carriedMessages } from '../../host/delivered-messages.js';
import type { Principal } from '../../host/principals.js';
import { type AttachmentRef, type MessageProjection, projectionText } from '../../host/projection.js';
import { type CoverageRead, recordDeliveredCoverage } from '../../host/turns.js';

/** A message a turn carries: its projection and the attachments to materialise for the client. */
export interface DeliveredMessage {
  id: string;
  projection: MessageProjection;
  attachments: AttachmentRef[];
}

interface EnvelopeMessage {
  id: string;
  subject: string | null;
  body: string;
}

/** The messages inside a rendered `sluice.delivery.v1` text (its second line). */
export function envelopeMessages(text: string): EnvelopeMessage[] {
  const json = text.split('\n')[1];
  if (json === undefined) return [];
  try {
    const parsed = JSON.parse(json) as { messages?: unknown };
    return Array.isArray(parsed.messages) ? (parsed.messages as EnvelopeMessage[]) : [];
  } catch {
    return [];
  }
}

/**
 * The messages a rendered delivery carries whole, as they are now, with the coverage each one
 * would record. A message edited between rendering and now is left out: the model never saw this
 * version, so it is not covered (it stays pending). Used for turns and for steers alike.
 */
export async function carriedWhole(
  ctx: HostContext,
  agent: Principal,
  delivery: RenderedDelivery,
): Promise<{ reads: CoverageRead[]; delivered: DeliveredMessage[] }> {
  const rendered = new Map(envelopeMessages(delivery.text).map((m) => [m.id, m]));
  const reads: CoverageRead[] = [];
  const delivered: DeliveredMessage[] = [];
  for (const row of await carriedMessages(ctx, agent, delivery.included)) {
    const projection = row.projection;
    const seen = rendered.get(row.id);
    if (!seen || seen.body !== projection.body || seen.subject !== (projection.subject ?? null)) continue;
    const text = projectionText(projection);
    reads.push({
      messageSeq: row.seq,
      sha256: sha256Hex(text),
      offset: 0,
      end: text.length,
      total: text.length,
    });
    delivered.push({ id: row.id, projection, attachments: projection.attachments });
  }
  return { reads, delivered };
}

/** Records, in the agent's open turn, complete coverage of every message the delivery carries whole. */
export async function coverDelivery(
  ctx: HostContext,
  agent: Principal,
  delivery: RenderedDelivery,
): Promise<DeliveredMessage[]> {
  const { reads, delivered } = await carriedWhole(ctx, agent, delivery);
  // The driver hands this envelope to the client itself, and the turn can only succeed once the
  // client took it: its coverage is recorded now, in one transaction with the open-turn lookup.
  await recordDeliveredCoverage(ctx, agent, reads);
  return delivered;
}
