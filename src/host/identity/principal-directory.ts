import { SluiceError } from '../../core/errors.js';
import type { PrincipalListPage } from '../../core/wire/index.js';
import { listManagedAgents } from '../../store/ops/agent-managers.js';
import { listPrincipalDirectory, type PrincipalEntry } from '../../store/ops/principal-directory.js';
import type { Db } from '../../store/store.js';
import { isHostOwner } from './access.js';
import type { HostContext } from './context.js';
import type { Principal } from './principals.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { PrincipalListPage };

/** Largest and default `principal.list` page. */
export const MAX_PRINCIPAL_PAGE = 200;

/**
 * `principal.list`: names and kinds of every principal, for starting a DM or naming members. Any
 * signed-in principal may list them (names are already how everyone addresses everyone). With
 * `managed: true`, only the agents the caller manages (access.ts `mayManageAgent`): every agent
 * for the owner, the agents a person manages, an agent itself: what the page lists as theirs.
 */
export async function principalDirectoryPage(
  ctx: HostContext,
  caller: Principal,
  p: { after?: string | undefined; limit?: number | undefined; managed?: boolean | undefined },
): Promise<PrincipalListPage> {
  const limit = p.limit ?? MAX_PRINCIPAL_PAGE;
  if (limit < 1 || limit > MAX_PRINCIPAL_PAGE)
    throw new SluiceError('invalid_params', `limit must be 1-${MAX_PRINCIPAL_PAGE}`, { field: 'limit' });
  const query = { after: p.after, limit: limit + 1 };
  const rows =
    p.managed === true
      ? await managedAgents(ctx.store.db, caller, query)
      : await listPrincipalDirectory(ctx.store.db, query);
  const principals = rows.slice(0, limit).map((r) => ({ id: r.id, name: r.name, kind: r.kind }));
  return { principals, nextAfter: rows.length > limit ? (principals.at(-1)?.name ?? null) : null };
}

async function managedAgents(
  db: Db,
  caller: Principal,
  query: { after: string | undefined; limit: number },
): Promise<PrincipalEntry[]> {
  if (caller.kind === 'agent')
    return query.after === undefined || caller.name > query.after
      ? [{ id: caller.id, name: caller.name, kind: caller.kind }]
      : [];
  if (isHostOwner(caller)) return listPrincipalDirectory(db, { ...query, kind: 'agent' });
  return listManagedAgents(db, caller.id, query);
}
