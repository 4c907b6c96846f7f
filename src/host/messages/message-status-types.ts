// The shapes of `message.status` (RPC, MCP, CLI --json) with no imports, so the web page can take
// its wire types from here instead of restating them (web/src/wire.ts).

/**
 * Where one recipient agent's copy of a message stands, read from the records the consumption
 * rule writes (docs/delivery.md "Message status"):
 * - `stored`: in the agent's inbox, not yet offered to its model;
 * - `offered`: a delivery or a page carried it (or part of it) to the model, not yet received whole;
 * - `received`: the model received it whole in the agent's open turn: it counts when the turn settles;
 * - `handled`: a settled turn consumed it; `answered`: the agent replied to it (reply_to);
 * - `archived`: the agent archived it; `withdrawn`: its sender took it back;
 * - `returned`: a turn that carried it failed; `reason` says why. It waits for a person.
 */
export type RecipientState =
  | 'stored'
  | 'offered'
  | 'received'
  | 'handled'
  | 'answered'
  | 'archived'
  | 'withdrawn'
  | 'returned';

/** One recipient agent's row of a message status. */
export interface RecipientStatus {
  agent: string;
  state: RecipientState;
  /** When the state began, as far as the records tell (ISO 8601; see readMessageStatus in message-status.ts). */
  since: string;
  /** Why it was returned (null otherwise, or when the caller may see only the failure kind's word). */
  reason: string | null;
  /** `answered`: the id of the agent's first reply. */
  replyId?: string;
}

/** A message's status: one row per recipient agent, agents in name order. */
export interface MessageStatus {
  messageId: string;
  channelId: string;
  recipients: RecipientStatus[];
  /** All recipients; more than `recipients.length` when the list was cut at MAX_RECIPIENTS (100). */
  recipientCount: number;
}
