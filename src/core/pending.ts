/**
 * Pending = waiting ∪ returned (DESIGN.md §2): the one list every query, check and the hook's raw
 * reader use. In core so the hook path can use it without loading the store.
 */
export const PENDING_STATES = ['waiting', 'returned'] as const;

export type PendingState = (typeof PENDING_STATES)[number];

/** True for a state in {@link PENDING_STATES}. */
export function isPendingState(state: string): state is PendingState {
  return (PENDING_STATES as readonly string[]).includes(state);
}

/**
 * {@link PENDING_STATES} as an SQL list of literals (constants, never input). Queries write the
 * pending condition with it, never with bound values: the inbox_pending index (migration 021)
 * holds only pending entries, and SQLite uses a partial index only for a condition that says the
 * same literally.
 */
export const PENDING_SQL_LIST = PENDING_STATES.map((state) => `'${state}'`).join(', ');

/**
 * The rule for what an agent may read of its inbox, as SQL over the inbox row named `alias`: its
 * channel is one the agent is a current member of (I6). An entry of a channel it left, or was
 * removed from, stays pending (nothing is consumed, I3) but is hidden until it rejoins: not listed,
 * delivered, counted, nor blocking its queue. Text with no input in it, shared by the store's
 * queries (store/ops/inbox.ts) and the hook's raw reader, so both apply the same rule.
 */
export function readableEntrySql(alias: 'inbox' | 'i'): string {
  return `exists (select 1 from memberships rm where rm.channel_id = ${alias}.channel_id and rm.principal_id = ${alias}.agent_id and rm.left_at is null)`;
}
