import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { PENDING_SQL_LIST, PENDING_STATES } from '../../core/pending.js';
import type { InboxState } from '../schema.js';

/**
 * `column in ('waiting', 'returned')`, with the states as literals: the condition the
 * inbox_pending index (migration 021) is defined by, so a walk of pending entries reads only
 * those, however many the agent has consumed. With bound values SQLite would not use that index.
 */
export function pendingState(column: 'inbox.state' | 'state'): RawBuilder<SqlBool> {
  return sql<SqlBool>`${sql.ref(column)} in (${sql.raw(PENDING_SQL_LIST)})`;
}

/** True when `states` is exactly the pending states, in any order. */
export function isPendingList(states: readonly InboxState[]): boolean {
  return states.length === PENDING_STATES.length && PENDING_STATES.every((s) => states.includes(s));
}
