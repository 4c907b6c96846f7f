import { senderLabel } from '../../core/envelope-text.js';
import {
  type MessageOrigin,
  type SenderFacts,
  type SenderRelation,
  senderRelation,
} from '../../core/provenance.js';
import { listAgentManagerIds } from '../../store/ops/agent-managers.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import type { MessageProjection } from './projection.js';

/** What each author is to one reader (core/provenance.ts), from one read of the reader's managers. */
export type RelationOf = (author: SenderFacts) => SenderRelation;

/**
 * The relation function for `reader`: its managers are read once, so a page of any size costs one
 * query. Only an agent has managers; for a person every other person is `person` (or `owner`).
 */
export async function relationsFor(
  ctx: HostContext,
  reader: Pick<Principal, 'id' | 'kind'>,
): Promise<RelationOf> {
  const managers = new Set(reader.kind === 'agent' ? await listAgentManagerIds(ctx.store.db, reader.id) : []);
  return (author) => senderRelation(author, reader.id, managers);
}

/** A message as a model reads it in a page: the projection with `sender` right after `author`. */
export type ReaderMessage = MessageProjection & { sender: SenderRelation };

/**
 * The projection with what its author is to the reader. `sender` is beside the projection, not in
 * it: the projection's text is what coverage hashes, and it is the same for every reader.
 */
export function withSender(projection: MessageProjection, relationOf: RelationOf): ReaderMessage {
  const { channel_id, message_id, author, ...rest } = projection;
  return { channel_id, message_id, author, sender: relationOf(author), ...rest };
}

/** What a model is told of a message's sender: `sender`, and `via` when it came through a bridge. */
export interface Provenance {
  sender: SenderRelation;
  via?: MessageOrigin;
}

/** {@link Provenance} of one message for the reader, keys in the order a model reads them. */
export function provenanceOf(
  projection: Pick<MessageProjection, 'author' | 'via'>,
  relationOf: RelationOf,
): Provenance {
  const sender = relationOf(projection.author);
  return projection.via === undefined ? { sender } : { sender, via: projection.via };
}

/** `alice (manager)`, `alice (person, via telegram)`: the prose form (core/envelope.ts senderLabel). */
export function senderLabelOf(
  projection: Pick<MessageProjection, 'author' | 'via'>,
  relationOf: RelationOf,
): string {
  const { sender, via } = provenanceOf(projection, relationOf);
  return senderLabel(projection.author.name, sender, via);
}
