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
