import type { Selectable } from 'kysely';
import type { InvitationsTable } from '../schema.js';
import type { Db } from '../store.js';
import type { ChannelRow } from './channels.js';

export type InvitationRow = Selectable<InvitationsTable>;

/** Records an invitation; a repeated one keeps the first (its time and inviter). */
export async function insertInvitation(db: Db, row: InvitationRow): Promise<void> {
  await db
    .insertInto('invitations')
    .values(row)
    .onConflict((oc) => oc.columns(['channel_id', 'principal_id']).doNothing())
    .execute();
}

export async function findInvitation(
  db: Db,
  channelId: string,
  principalId: string,
): Promise<InvitationRow | undefined> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('channel_id', '=', channelId)
    .where('principal_id', '=', principalId)
    .executeTakeFirst();
}

/** Removes an invitation (accepted, declined, or the channel's membership made it moot). */
export async function deleteInvitation(db: Db, channelId: string, principalId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('invitations')
    .where('channel_id', '=', channelId)
    .where('principal_id', '=', principalId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** How many invitations from one inviter to one invitee are still pending (index probe). */
export async function countPendingInvitations(
  db: Db,
  principalId: string,
  invitedBy: string,
): Promise<number> {
  const row = await db
    .selectFrom('invitations')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('principal_id', '=', principalId)
    .where('invited_by', '=', invitedBy)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** How many invitations one inviter has pending, to anyone (`invitations_by_inviter`). */
export async function countInvitationsFrom(db: Db, invitedBy: string): Promise<number> {
  const row = await db
    .selectFrom('invitations')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('invited_by', '=', invitedBy)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Drops every pending invitation from one inviter to one principal (a block clears them). */
export async function deleteInvitationsFromTo(
  db: Db,
  principalId: string,
  invitedBy: string,
): Promise<number> {
  const result = await db
    .deleteFrom('invitations')
    .where('principal_id', '=', principalId)
    .where('invited_by', '=', invitedBy)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export interface InvitationListing {
  channel: ChannelRow;
  invitedBy: { id: string; name: string; kind: 'person' | 'agent' };
  createdAt: string;
}

/** One page of a principal's invitations in channel-name order, after `afterName`. */
export async function listInvitationsPageOf(
  db: Db,
  principalId: string,
  page: { afterName?: string | undefined; limit: number },
): Promise<InvitationListing[]> {
  let query = db
    .selectFrom('invitations')
    .innerJoin('channels', 'channels.id', 'invitations.channel_id')
    .innerJoin('principals', 'principals.id', 'invitations.invited_by')
    .selectAll('channels')
    .select([
      'principals.id as inviter_id',
      'principals.name as inviter_name',
      'principals.kind as inviter_kind',
      'invitations.created_at as invited_at',
    ])
    .where('invitations.principal_id', '=', principalId);
  if (page.afterName !== undefined) query = query.where('channels.name', '>', page.afterName);
  const rows = await query.orderBy('channels.name').limit(page.limit).execute();
  return rows.map(({ inviter_id, inviter_name, inviter_kind, invited_at, ...channel }) => ({
    channel,
    invitedBy: { id: inviter_id, name: inviter_name, kind: inviter_kind },
    createdAt: invited_at,
  }));
}
