import type { PrincipalKind } from '../schema.js';
import type { Db } from '../store.js';

export interface MemberEntry {
  id: string;
  name: string;
  kind: PrincipalKind;
}

/**
 * One page of a channel's current members in name order, strictly after `afterName`: a keyset
 * page (principal names are unique), so its cost does not grow with the members before it.
 */
export async function listActiveMembersPage(
  db: Db,
  channelId: string,
  page: { afterName?: string | undefined; limit: number },
): Promise<MemberEntry[]> {
  let query = db
    .selectFrom('memberships')
    .innerJoin('principals', 'principals.id', 'memberships.principal_id')
    .select(['principals.id as id', 'principals.name as name', 'principals.kind as kind'])
    .where('memberships.channel_id', '=', channelId)
    .where('memberships.left_at', 'is', null);
  if (page.afterName !== undefined) query = query.where('principals.name', '>', page.afterName);
  return query.orderBy('principals.name').limit(page.limit).execute();
}

/** How many current members a channel has (the primary key's channel prefix). */
export async function countActiveMembers(db: Db, channelId: string): Promise<number> {
  const row = await db
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('channel_id', '=', channelId)
    .where('left_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** How many current members each of the channels has (channels with none are left out). */
export async function countActiveMembersOf(
  db: Db,
  channelIds: readonly string[],
): Promise<Map<string, number>> {
  if (channelIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('memberships')
    .select((eb) => ['channel_id', eb.fn.countAll<number | string>().as('n')])
    .where('channel_id', 'in', [...channelIds])
    .where('left_at', 'is', null)
    .groupBy('channel_id')
    .execute();
  return new Map(rows.map((r) => [r.channel_id, Number(r.n)] as const));
}
