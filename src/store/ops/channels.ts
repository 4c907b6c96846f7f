import type { Selectable } from 'kysely';
import type { ChannelsTable, MembershipsTable, PrincipalKind } from '../schema.js';
import type { Db } from '../store.js';

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

/** Adds a member, or re-admits one who left (a fresh join time). */
export async function upsertMembership(
  db: Db,
  channelId: string,
  principalId: string,
  at: string,
): Promise<void> {
  await db
    .insertInto('memberships')
    .values({ channel_id: channelId, principal_id: principalId, joined_at: at, left_at: null })
    .onConflict((oc) =>
      oc.columns(['channel_id', 'principal_id']).doUpdateSet({ joined_at: at, left_at: null }),
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

export async function isActiveMember(db: Db, channelId: string, principalId: string): Promise<boolean> {
  const row = await db
    .selectFrom('memberships')
    .select('principal_id')
    .where('channel_id', '=', channelId)
    .where('principal_id', '=', principalId)
    .where('left_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** Channel ids where the principal is a current member. */
export async function listActiveChannelIds(db: Db, principalId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('memberships')
    .select('channel_id')
    .where('principal_id', '=', principalId)
    .where('left_at', 'is', null)
    .execute();
  return rows.map((r) => r.channel_id);
}

export async function listChannelsOf(db: Db, principalId: string): Promise<ChannelRow[]> {
  return db
    .selectFrom('channels')
    .innerJoin('memberships', 'memberships.channel_id', 'channels.id')
    .selectAll('channels')
    .where('memberships.principal_id', '=', principalId)
    .where('memberships.left_at', 'is', null)
    .orderBy('channels.name')
    .execute();
}

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
