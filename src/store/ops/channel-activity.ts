import { sql } from 'kysely';
import type { Db } from '../store.js';
import type { ChannelRow } from './channels.js';
import {
  countFullMemberLists,
  type NewestMessage,
  newestColumn,
  OWN_MEMBERSHIP,
  onOwnMembership,
  parseNewest,
  parseShownMembers,
  type ReadRefs,
  type ShownMembers,
  shownMembersColumn,
} from './sidebar-columns.js';

/** A place in "my channels by recent activity": the keyset a page continues after. */
export interface ActivityKey {
  activity: number;
  channelId: string;
}

/** What each row of a page carries besides its channel: see sidebar-columns.ts. */
export interface SidebarColumns {
  /** Members shown per row, in name order. */
  shown: number;
  /** Messages after the read mark an unread count looks at, at most. */
  maxUnread: number;
}

/**
 * A channel row with the caller's activity key for it and join time, its first members by name,
 * how many members it has and its newest messages after the caller's read mark (newest first).
 */
export type ChannelByActivity = Pick<ChannelRow, 'id' | 'name' | 'kind'> &
  ShownMembers & { activity: number; joinedAt: string; newest: NewestMessage[] };

export interface ActivityPageQuery extends SidebarColumns {
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
 * The sidebar columns of a page's rows, selected beside them: subqueries in the select list run
 * for the rows the query returns only (each walk below delivers its rows in order: no sort first).
 */
function sidebarColumns(db: Db, refs: ReadRefs, columns: SidebarColumns) {
  return [
    newestColumn(db, refs, columns.maxUnread),
    shownMembersColumn(db, refs.channelId, columns.shown),
  ] as const;
}

type SidebarRow = Pick<ChannelRow, 'id' | 'name' | 'kind'> & {
  activity: number | string;
  joined_at: string;
  newest: string;
  members: string;
};

// Field by field: a rest pattern over a row costs more than the rest of its mapping.
function toChannelByActivity(row: SidebarRow): ChannelByActivity {
  const shown = parseShownMembers(row.members);
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    activity: Number(row.activity),
    joinedAt: row.joined_at,
    newest: parseNewest(row.newest),
    members: shown.members,
    count: shown.count,
  };
}

/** The rows as the page lists them, members counted where their lists filled up. */
async function toChannelsByActivity(
  db: Db,
  rows: SidebarRow[],
  columns: SidebarColumns,
): Promise<ChannelByActivity[]> {
  const channels = rows.map(toChannelByActivity);
  await countFullMemberLists(db, channels, columns.shown);
  return channels;
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

/**
 * One page of the principal's channels by recent activity (see {@link membershipsByActivity}),
 * each with its sidebar columns: one statement (and one more when a filter's scan ends short).
 */
export async function listChannelsByActivity(
  db: Db,
  principalId: string,
  page: ActivityPageQuery,
): Promise<ActivityPage> {
  const walk = membershipsByActivity(db, principalId, page.after);
  if (page.nameContains === undefined) {
    const rows = await walk
      .innerJoin('channels', 'channels.id', 'memberships.channel_id')
      .leftJoin('read_marks', onOwnMembership)
      .select(['channels.id', 'channels.name', 'channels.kind'])
      .select(['memberships.activity_seq as activity', 'memberships.joined_at'])
      .select(sidebarColumns(db, OWN_MEMBERSHIP, page))
      .limit(page.limit)
      .execute();
    return { rows: await toChannelsByActivity(db, rows, page), scannedTo: null };
  }
  const scan = page.scan ?? Number.MAX_SAFE_INTEGER;
  const window = walk
    .select(['memberships.channel_id', 'memberships.activity_seq', 'memberships.joined_at'])
    .limit(scan)
    .as('m');
  const refs = { ...OWN_MEMBERSHIP, channelId: sql.ref('m.channel_id') };
  const rows = await db
    .selectFrom(window)
    .innerJoin('channels', 'channels.id', 'm.channel_id')
    .leftJoin('read_marks', (join) =>
      join
        .onRef('read_marks.channel_id', '=', 'm.channel_id')
        .on('read_marks.principal_id', '=', principalId),
    )
    .select(['channels.id', 'channels.name', 'channels.kind'])
    .select(['m.activity_seq as activity', 'm.joined_at'])
    .select(sidebarColumns(db, refs, page))
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
  return { rows: await toChannelsByActivity(db, rows, page), scannedTo };
}

/** One channel of the principal's with its activity key and sidebar columns, if they are a member now. */
export async function findChannelByActivity(
  db: Db,
  principalId: string,
  channelId: string,
  columns: SidebarColumns,
): Promise<ChannelByActivity | undefined> {
  const row = await db
    .selectFrom('memberships')
    .innerJoin('channels', 'channels.id', 'memberships.channel_id')
    .leftJoin('read_marks', onOwnMembership)
    .select(['channels.id', 'channels.name', 'channels.kind'])
    .select(['memberships.activity_seq as activity', 'memberships.joined_at'])
    .select(sidebarColumns(db, OWN_MEMBERSHIP, columns))
    .where('memberships.principal_id', '=', principalId)
    .where('memberships.channel_id', '=', channelId)
    .where('memberships.left_at', 'is', null)
    .executeTakeFirst();
  return row && (await toChannelsByActivity(db, [row], columns))[0];
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
  const rows = await db
    .selectFrom('channels')
    .select(['channels.id', shownMembersColumn(db, sql.ref('channels.id'), shown)])
    .where('channels.id', 'in', [...channelIds])
    .execute();
  const lists = rows.map((row) => ({ id: row.id, ...parseShownMembers(row.members) }));
  await countFullMemberLists(db, lists, shown);
  for (const { id, ...list } of lists) out.set(id, list);
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
