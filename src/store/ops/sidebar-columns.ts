import { type AliasedRawBuilder, type JoinBuilder, type RawBuilder, sql } from 'kysely';
import type { Database } from '../schema.js';
import { type Db, dialectOf } from '../store.js';
import { countActiveMembersOf, type MemberEntry } from './member-pages.js';

// What a sidebar row shows beside its channel (its first members, what its unread count walks)
// as correlated subqueries: a page reads them with its own rows, in its one statement. Read per
// row with queries of their own, a 30-row page cost half as much again as a 10-row one.
// The subqueries' own tables carry aliases of their own (sb_…): the references they are given
// name the outer query's tables.

/** Where the outer query holds a channel's id. */
export type Ref = RawBuilder<unknown>;

/** Where the outer query holds the channel and the reader's read mark of it. */
export interface ReadRefs {
  channelId: Ref;
  /** The reader's read mark (a left join: null when they have none). */
  readSeq: Ref;
}

/**
 * The reader's read mark where a query joins `memberships` (the reader's own row) and
 * `read_marks` (left joined on the membership) under their table names.
 */
export const OWN_MEMBERSHIP: ReadRefs = {
  channelId: sql.ref('memberships.channel_id'),
  readSeq: sql.ref('read_marks.last_read_seq'),
};

/** The tables a membership's page joins: the reader's memberships, their channels, read marks. */
type OwnMembershipTables = 'memberships' | 'channels' | 'read_marks';

/** The left join of `read_marks` that {@link OWN_MEMBERSHIP} names: the reader's own mark. */
export function onOwnMembership(
  join: JoinBuilder<Database, OwnMembershipTables>,
): JoinBuilder<Database, OwnMembershipTables> {
  return join
    .onRef('read_marks.channel_id', '=', 'memberships.channel_id')
    .onRef('read_marks.principal_id', '=', 'memberships.principal_id');
}

export interface ShownMembers {
  members: MemberEntry[];
  count: number;
}

/** A live message after the reader's read mark, without its body: what an unread count looks at. */
export interface NewestMessage {
  seq: number;
  authorId: string;
  createdAt: string;
}

/**
 * The channel's newest `max` live messages after the reader's read mark, without bodies, as JSON
 * text ({@link parseNewest}): what an unread count walks (host/channels/read-marks.ts). One walk
 * of the (channel_id, seq) index of at most `max` rows.
 */
export function newestColumn(db: Db, refs: ReadRefs, max: number): AliasedRawBuilder<string, 'newest'> {
  // In no particular order: parseNewest sorts the few rows by seq.
  const agg = dialectOf(db).jsonArrayAgg([
    ['seq', sql.ref('sb_w.seq')],
    ['authorId', sql.ref('sb_w.author_id')],
    ['createdAt', sql.ref('sb_w.created_at')],
  ]);
  return sql<string>`(select ${agg} from (
      select seq, author_id, created_at from messages sb_m
       where sb_m.channel_id = ${refs.channelId} and sb_m.seq > coalesce(${refs.readSeq}, 0)
         and sb_m.deleted_at is null
       order by sb_m.seq desc limit ${max}) as sb_w)`.as('newest');
}

/** The messages of {@link newestColumn}, newest first. */
export function parseNewest(newest: string): NewestMessage[] {
  if (newest === '[]') return []; // all read: most rows
  return (JSON.parse(newest) as NewestMessage[]).sort((a, b) => b.seq - a.seq);
}

/** The channel's first `shown` current members by name, as JSON text ({@link parseShownMembers}). */
export function shownMembersColumn(
  db: Db,
  channelId: Ref,
  shown: number,
): AliasedRawBuilder<string, 'members'> {
  // The keys of MemberEntry, in its order: the objects go into replies as they are parsed.
  const agg = dialectOf(db).jsonArrayAgg(
    [
      ['id', sql.ref('sb_s.id')],
      ['name', sql.ref('sb_s.name')],
      ['kind', sql.ref('sb_s.kind')],
    ],
    sql.ref('sb_s.name'),
  );
  return sql<string>`(select ${agg} from (
      select sb_p.id, sb_p.name, sb_p.kind from memberships sb_x join principals sb_p on sb_p.id = sb_x.principal_id
       where sb_x.channel_id = ${channelId} and sb_x.left_at is null
       order by sb_p.name limit ${shown}) as sb_s)`.as('members');
}

/**
 * The members of {@link shownMembersColumn}, counted: a list shorter than `shown` is every member.
 * Lists that filled up are counted by {@link countFullMemberLists}.
 */
export function parseShownMembers(members: string): ShownMembers {
  const list = JSON.parse(members) as MemberEntry[];
  return { members: list, count: list.length };
}

/**
 * Counts the members of the rows whose shown members filled `shown` (their lists hold only the
 * first): one statement for all of them, none when no list filled up, as on most pages. A count
 * for every row, as a column beside the members, cost more than the rest of a row's columns.
 */
export async function countFullMemberLists(
  db: Db,
  rows: readonly { id: string; count: number }[],
  shown: number,
): Promise<void> {
  const full = rows.filter((r) => r.count >= shown);
  if (full.length === 0) return;
  const counts = await countActiveMembersOf(
    db,
    full.map((r) => r.id),
  );
  for (const row of full) row.count = counts.get(row.id) ?? row.count;
}
