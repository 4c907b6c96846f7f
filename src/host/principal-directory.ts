import { SluiceError } from '../core/errors.js';
import { listPrincipalDirectory, type PrincipalEntry } from '../store/ops/principal-directory.js';
import type { HostContext } from './context.js';

/** Largest and default `principal.list` page. */
export const MAX_PRINCIPAL_PAGE = 200;

/** The `principal.list` reply. */
export interface PrincipalListPage {
  principals: PrincipalEntry[];
  /** The name to continue after, or null on the last page. */
  nextAfter: string | null;
}

/**
 * `principal.list`: names and kinds of every principal, for starting a DM or naming members. Any
 * signed-in principal may list them (names are already how everyone addresses everyone).
 */
export async function principalDirectoryPage(
  ctx: HostContext,
  p: { after?: string | undefined; limit?: number | undefined },
): Promise<PrincipalListPage> {
  const limit = p.limit ?? MAX_PRINCIPAL_PAGE;
  if (limit < 1 || limit > MAX_PRINCIPAL_PAGE)
    throw new SluiceError('invalid_params', `limit must be 1-${MAX_PRINCIPAL_PAGE}`, { field: 'limit' });
  const rows = await listPrincipalDirectory(ctx.store.db, { after: p.after, limit: limit + 1 });
  const principals = rows.slice(0, limit).map((r) => ({ id: r.id, name: r.name, kind: r.kind }));
  return { principals, nextAfter: rows.length > limit ? (principals.at(-1)?.name ?? null) : null };
}
