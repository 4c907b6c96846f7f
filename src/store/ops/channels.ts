import { type Selectable, sql } from 'kysely';
import { precompile } from '../precompiled.js';
import type { ChannelsTable, MembershipsTable, PrincipalKind } from '../schema.js';
import { type Db, dialectOf } from '../store.js';
import { countActiveMembers, listActiveMembersPage } from './member-pages.js';

export type ChannelRow = Selectable<ChannelsTable>;
export type MembershipRow = Selectable<MembershipsTable>;

export async function insertChannel(db: Db, row: ChannelRow): Promise<void> {
  await db.insertInto('channels').values(row).execute();
}

export async function findChannelById(db: Db, id: string): Promise<ChannelRow | undefined> {
  return db.selectFrom('channels').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findChannelByName(db: Db, name: string): Promise<ChannelRow | undefined> {
  return db.selectFrom('channels').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function findChannelByDmKey(db: Db, dmKey: string): Promise<ChannelRow | undefined> {
  return db.selectFrom('channels').selectAll().where('dm_key', '=', dmKey).executeTakeFirst();
}

/**
 * Adds a member, or re-admits one who left (a fresh join time). A join is activity: the channel
 * sorts first in the member's sidebar, just past the newest event (every join appends one).
 */
export async function upsertMembership(
  db: Db,
  channelId: string,
  principalId: string,
  at: string,
): Promise<void> {
  const newest = sql<number>`(select coalesce(max(seq), 0) + 1 from events)`;
  await db
    .insertInto('memberships')
    .values({
      channel_id: channelId,
      principal_id: principalId,
      joined_at: at,
      left_at: null,
      activity_seq: newest,
    })
    .onConflict((oc) =>
      oc
        .columns(['channel_id', 'principal_id'])
        .doUpdateSet({ joined_at: at, left_at: null, activity_seq: newest }),
    )
    .execute();
}

export async function markMembershipLeft(
  db: Db,
  channelId: string,
  principalId: string,
  at: string,
): Promise<boolean> {
  const result = await db
    .updateTable('memberships')
    .set({ left_at: at })
    .where('channel_id', '=', channelId)
    .where('principal_id', '=', principalId)
    .where('left_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Whether the principal is a current member. Inside a PostgreSQL write transaction the row is read
 * FOR SHARE: a removal running beside it waits for this transaction, or, committed first, makes
 * the row no longer match, so a check that guards a write holds until the write commits (SQLite's
 * BEGIN IMMEDIATE already serialises writers).
 */
export async function isActiveMember(db: Db, channelId: string, principalId: string): Promise<boolean> {
  const query = db
    .selectFrom('memberships')
    .select('principal_id')
    .where('channel_id', '=', channelId)
    .where('principal_id', '=', principalId)
    .where('left_at', 'is', null);
  const locked = db.isTransaction && dialectOf(db).locksRowsRead;
  const row = await (locked ? query.forShare() : query).executeTakeFirst();
  return row !== undefined;
}

/** Channel ids where the principal is a current member. */
export async function listActiveChannelIds(db: Db, principalId: string): Promise<string[]> {
  const rows = await ACTIVE_CHANNEL_IDS.all(db, principalId);
  return rows.map((r) => r.channel_id);
}

// Every model read asks it: built once (precompiled.ts).
const ACTIVE_CHANNEL_IDS = precompile((db: Db, principalId: string) =>
  db
    .selectFrom('memberships')
    .select('channel_id')
    .where('principal_id', '=', principalId)
    .where('left_at', 'is', null),
);

export interface ActiveMember {
  id: string;
  name: string;
  kind: PrincipalKind;
}

export async function listActiveMembers(db: Db, channelId: string): Promise<ActiveMember[]> {
  return db
    .selectFrom('memberships')
    .innerJoin('principals', 'principals.id', 'memberships.principal_id')
    .select(['principals.id as id', 'principals.name as name', 'principals.kind as kind'])
    .where('memberships.channel_id', '=', channelId)
    .where('memberships.left_at', 'is', null)
    .orderBy('principals.name')
    .execute();
}

/** Channels where both principals are current members (for a == b: all of a's channels). */
export async function sharedChannelIds(db: Db, a: string, b: string): Promise<string[]> {
  const rows = await db
    .selectFrom('memberships as m1')
    .innerJoin('memberships as m2', 'm2.channel_id', 'm1.channel_id')
    .select('m1.channel_id')
    .where('m1.principal_id', '=', a)
    .where('m1.left_at', 'is', null)
    .where('m2.principal_id', '=', b)
    .where('m2.left_at', 'is', null)
    .execute();
  return rows.map((r) => r.channel_id);
}

/** Everyone who currently shares at least one channel with the principal (one query). */
export async function principalIdsSharingWith(db: Db, principalId: string): Promise<Set<string>> {
  const rows = await db
    .selectFrom('memberships as m1')
    .innerJoin('memberships as m2', 'm2.channel_id', 'm1.channel_id')
    .select('m1.principal_id')
    .distinct()
    .where('m2.principal_id', '=', principalId)
    .where('m2.left_at', 'is', null)
    .where('m1.left_at', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.principal_id));
}

/**
 * One page of the principal's current channels in name order (names are unique), starting after
 * `afterName`: a keyset page, so its cost does not grow with how many channels came before.
 */
export async function listChannelsPageOf(
  db: Db,
  principalId: string,
  page: { afterName?: string | undefined; limit: number },
): Promise<ChannelRow[]> {
  let query = db
    .selectFrom('channels')
    .innerJoin('memberships', 'memberships.channel_id', 'channels.id')
    .selectAll('channels')
    .where('memberships.principal_id', '=', principalId)
    .where('memberships.left_at', 'is', null);
  if (page.afterName !== undefined) query = query.where('channels.name', '>', page.afterName);
  return query.orderBy('channels.name').limit(page.limit).execute();
}

/** The first `limit` current members in name order, and how many there are in all. */
export async function listActiveMembersBounded(
  db: Db,
  channelId: string,
  limit: number,
): Promise<{ members: ActiveMember[]; count: number }> {
  const members = await listActiveMembersPage(db, channelId, { limit });
  if (members.length < limit) return { members, count: members.length };
  return { members, count: await countActiveMembers(db, channelId) };
}
