import type { PrincipalKind } from '../schema.js';
import type { Db } from '../store.js';

/** What anyone signed in may know about a principal: its name and kind (no settlement, no tokens). */
export interface PrincipalEntry {
  id: string;
  name: string;
  kind: PrincipalKind;
}

/** One page of principals (of one kind, if given) in name order, strictly after `after` (a name), at most `limit`. */
export async function listPrincipalDirectory(
  db: Db,
  options: { after?: string | undefined; limit: number; kind?: PrincipalKind },
): Promise<PrincipalEntry[]> {
  let q = db.selectFrom('principals').select(['id', 'name', 'kind']).orderBy('name').limit(options.limit);
  if (options.after !== undefined) q = q.where('name', '>', options.after);
  if (options.kind !== undefined) q = q.where('kind', '=', options.kind);
  return q.execute();
}
