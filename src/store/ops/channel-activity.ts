import { sql } from 'kysely';
import type { PrincipalKind } from '../schema.js';
import type { Db } from '../store.js';
import type { ChannelRow } from './channels.js';

/** A place in "my channels by recent activity": the keyset a page continues after. */
export interface ActivityKey {
  activity: number;
  channelId: string;
}

/** A channel row with the caller's activity key for it. */
export type ChannelByActivity = ChannelRow & { activity: number };

export interface ActivityPageQuery {
  /** Continue strictly after this key (descending). */
  after?: ActivityKey | undefined;
  limit: number;
  /** Only channels whose name contains this text (any case). */
  nameContains?: string | undefined;
  /** With `nameContains`: memberships examined at most, so a filter with few hits stays bounded. */
  scan?: number;
}

export interface ActivityPage {
  rows: ChannelByActivity[];
  /** With a filter: the last membership examined when the scan bound was reached, else null. */
  scannedTo: ActivityKey | null;
}

/** `%text%` for LIKE, with LIKE's own characters escaped (names may hold `_`). */
function containsPattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The principal's current memberships, newest activity first (ties: newest channel id first),
 * strictly after `after`. One range walk of the partial index `memberships_by_activity`
 * (migration 017): a page costs the same whatever the principal's channel count.
 */
function membershipsByActivity(db: Db, principalId: string, after: ActivityKey | undefined) {
  let query = db
    .selectFrom('memberships')
    .where('memberships.principal_id', '=', principalId)
    .where('memberships.left_at', 'is', null);
  if (after !== undefined)
    query = query.where((eb) =>
      eb(
        eb.refTuple('memberships.activity_seq', 'memberships.channel_id'),
        '<',
        eb.tuple(after.activity, after.channelId),
      ),
    );
  return query.orderBy('memberships.activity_seq', 'desc').orderBy('memberships.channel_id', 'desc');
}

/** One page of the principal's channels by recent activity (see {@link membershipsByActivity}). */
export async function listChannelsByActivity(
  db: Db,
  principalId: string,
  page: ActivityPageQuery,
): Promise<ActivityPage> {
  const walk = membershipsByActivity(db, principalId, page.after);
  if (page.nameContains === undefined) {
    const rows = await walk
      .innerJoin('channels', 'channels.id', 'memberships.channel_id')
      .selectAll('channels')
      .select('memberships.activity_seq as activity')
      .limit(page.limit)
      .execute();
    return { rows: rows.map((r) => ({ ...r, activity: Number(r.activity) })), scannedTo: null };
  }
  const scan = page.scan ?? Number.MAX_SAFE_INTEGER;
  const window = walk.select(['memberships.channel_id', 'memberships.activity_seq']).limit(scan).as('m');
  const rows = await db
    .selectFrom(window)
    .innerJoin('channels', 'channels.id', 'm.channel_id')
    .selectAll('channels')
    .select('m.activity_seq as activity')
    // ESCAPE named: SQLite's LIKE has no escape character unless told (PostgreSQL's is `\`).
    .where(sql<boolean>`lower(channels.name) like ${containsPattern(page.nameContains ?? '')} escape '\\'`)
    .orderBy('m.activity_seq', 'desc')
    .orderBy('m.channel_id', 'desc')
    .limit(page.limit)
    .execute();
  let scannedTo: ActivityKey | null = null;
  if (rows.length < page.limit && scan !== Number.MAX_SAFE_INTEGER) {
    const last = await walk
      .select(['memberships.channel_id', 'memberships.activity_seq'])
      .offset(scan - 1)
      .limit(1)
      .executeTakeFirst();
    if (last) scannedTo = { activity: Number(last.activity_seq), channelId: last.channel_id };
  }
  return { rows: rows.map((r) => ({ ...r, activity: Number(r.activity) })), scannedTo };
}

/** One channel of the principal's with its activity key, if they are a member now. */
export async function findChannelByActivity(
  db: Db,
  principalId: string,
  channelId: string,
): Promise<ChannelByActivity | undefined> {
  const row = await db
    .selectFrom('memberships')
    .innerJoin('channels', 'channels.id', 'memberships.channel_id')
    .selectAll('channels')
    .select('memberships.activity_seq as activity')
    .where('memberships.principal_id', '=', principalId)
    .where('memberships.channel_id', '=', channelId)
    .where('memberships.left_at', 'is', null)
    .executeTakeFirst();
  return row && { ...row, activity: Number(row.activity) };
}

export interface ShownMembers {
  members: { id: string; name: string; kind: PrincipalKind }[];
  count: number;
}

/**
 * The first `shown` current members by name of each channel, and how many there are, in one
 * statement for a whole page (a query per row made a page's cost grow with its rows).
 */
export async function listMembersOfChannels(
  db: Db,
  channelIds: readonly string[],
  shown: number,
): Promise<Map<string, ShownMembers>> {
  const out = new Map<string, ShownMembers>();
  if (channelIds.length === 0) return out;
  // A template, not the query builder: building the window query cost more than running it.
  const { rows } = await sql<{
    channel_id: string;
    id: string;
    name: string;
    kind: PrincipalKind;
    total: number | string;
  }>`select channel_id, id, name, kind, total from (
       select m.channel_id, p.id, p.name, p.kind,
              row_number() over (partition by m.channel_id order by p.name) as rank,
              count(*) over (partition by m.channel_id) as total
         from memberships m join principals p on p.id = m.principal_id
        where m.channel_id in (${sql.join([...channelIds])}) and m.left_at is null) as r
     where rank <= ${shown} order by channel_id, rank`.execute(db);
  for (const row of rows) {
    let entry = out.get(row.channel_id);
    if (!entry) {
      entry = { members: [], count: Number(row.total) };
      out.set(row.channel_id, entry);
    }
    entry.members.push({ id: row.id, name: row.name, kind: row.kind });
  }
  return out;
}

/** A principal's membership row in a channel (current or left), if they ever joined it. */
export async function findMembershipTimes(
  db: Db,
  channelId: string,
  principalId: string,
): Promise<{ joined_at: string; left_at: string | null } | undefined> {
  return db
    .selectFrom('memberships')
    .select(['joined_at', 'left_at'])
    .where('channel_id', '=', channelId)
    .where('principal_id', '=', principalId)
    .executeTakeFirst();
}
