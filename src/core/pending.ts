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
