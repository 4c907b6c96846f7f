// Provenance a model can see (docs/security.md "Provenance"): every message a model reads carries
// what its sender is to the reader, so a body from a peer agent or a stranger cannot pass for one
// from the owner. The value is always one of these words, rendered by Sluice and never by a sender.

/**
 * What a message's sender is to the principal reading it: `self` (its own message, in history),
 * `owner` (the host owner), `manager` (a person who manages this agent), `person` (any other
 * person), `agent` (another agent), `unknown` (the author is gone or malformed: never trusted).
 */
export type SenderRelation = 'self' | 'owner' | 'manager' | 'person' | 'agent' | 'unknown';

/** Every {@link SenderRelation}, most trusted first. */
export const SENDER_RELATIONS: readonly SenderRelation[] = Object.freeze([
  'self',
  'owner',
  'manager',
  'person',
  'agent',
  'unknown',
]);

/** The host owner's principal name (`sluice init` makes it; host/identity/home.ts OWNER_NAME). */
export const HOST_OWNER_NAME = 'owner';

/** The facts about a message's author that decide its relation to a reader. */
export interface SenderFacts {
  id: string;
  name: string;
  /** `person` or `agent`; anything else (a missing principal) reads as `unknown`. */
  kind: string;
}

/**
 * What the author is to the reader. `managers` holds the ids of the persons who manage the reader
 * (empty for a person). The owner outranks manager: the owner may do all a manager may. Pure.
 */
export function senderRelation(
  author: SenderFacts,
  readerId: string,
  managers: ReadonlySet<string>,
): SenderRelation {
  if (author.id === readerId) return 'self';
  if (author.kind === 'agent') return 'agent';
  if (author.kind !== 'person') return 'unknown';
  if (author.name === HOST_OWNER_NAME) return 'owner';
  return managers.has(author.id) ? 'manager' : 'person';
}

/**
 * The path a message came in by, when it was not sent by its author directly: `telegram` is a
 * person's message the Telegram bridge relayed (stored in `messages.origin`, migration 020). Shown
 * beside `sender` as `"via"`; a direct send has none.
 */
export type MessageOrigin = 'telegram';

/** A stored origin as Sluice shows it: a known word, or nothing (a damaged value is never shown). */
export function originOf(stored: unknown): MessageOrigin | undefined {
  return stored === 'telegram' ? 'telegram' : undefined;
}
