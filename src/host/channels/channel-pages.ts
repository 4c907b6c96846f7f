import { z } from 'zod';
import { encodedCursorLength, encodedCursorLengthOfBytes } from '../../core/cursor.js';
import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import { requireWellFormed } from '../../core/text.js';
import type { ChannelActivityPage, ChannelActivityRow } from '../../core/wire/index.js';
import {
  type ActivityKey,
  type ChannelByActivity,
  findChannelByActivity,
  listChannelsByActivity,
  type SidebarColumns,
} from '../../store/ops/channel-activity.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { type CursorKind, issueCursor, readCursor } from '../reads/cursors.js';
import {
  type ChannelPageBudget,
  DEFAULT_CHANNEL_PAGE,
  LIST_MEMBERS_SHOWN,
  MAX_CHANNEL_PAGE,
} from './channels.js';
import { pageEnvelopeBytes } from './page-budget.js';
import { countUnread, MAX_UNREAD } from './read-marks.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { ChannelActivityPage, ChannelActivityRow };

/** What each row shows besides its channel. */
const COLUMNS: SidebarColumns = { shown: LIST_MEMBERS_SHOWN, maxUnread: MAX_UNREAD };

/** Memberships one filtered page examines at most: a filter that matches little stays bounded. */
export const FILTER_SCAN = 1000;

/** Longest filter text: channel names are at most 64 characters. */
export const MAX_FILTER_LENGTH = 64;

/** `channel.list {order: "activity"}`: the keyset (activity, channel id) to continue after. */
const ACTIVITY_CURSOR: CursorKind<{ a: number; c: string }> = {
  name: 'channel-activity',
  schema: z.object({ a: z.number().int(), c: z.string() }),
  refusal: 'invalid cursor: unexpected payload',
};

// The longest payload JSON of a key besides its channel id: the longest integer, an empty id.
const KEY_JSON_BYTES = utf8Length(JSON.stringify({ a: Number.MIN_SAFE_INTEGER, c: '' }));

/**
 * The longest cursor the key of a row of channel `channelId` could make (each UTF-16 unit of the
 * id escaped, 6 bytes): a row that fits with it needs its cursor's exact length no more.
 */
function cursorLengthBound(channelId: string): number {
  return encodedCursorLengthOfBytes(KEY_JSON_BYTES + 6 * channelId.length);
}

// Bound to the filter too (I6): a cursor of one filter continues no other list.
const binding = (actor: Principal, filter: string | undefined) => ({
  caller: actor.id,
  filter: `channel.list activity ${JSON.stringify(filter ?? null)}`,
  target: 'memberships',
});

export interface ChannelActivityParams {
  cursor?: string | undefined;
  limit?: number | undefined;
  /** Only channels whose name contains this text, in any case (a DM's name holds its members'). */
  filter?: string | undefined;
  /** Only this channel (a page opened at a channel the list has not reached yet). */
  channelId?: string | undefined;
}

function checkParams(params: ChannelActivityParams): { limit: number; filter: string | undefined } {
  const limit = params.limit ?? DEFAULT_CHANNEL_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_CHANNEL_PAGE) {
    throw new SluiceError('invalid_params', `limit must be an integer from 1 to ${MAX_CHANNEL_PAGE}`);
  }
  const filter = params.filter;
  if (filter !== undefined) {
    requireWellFormed('filter', filter);
    if (filter.length === 0 || filter.length > MAX_FILTER_LENGTH)
      throw new SluiceError('invalid_params', `filter must be 1 to ${MAX_FILTER_LENGTH} characters`);
  }
  if (params.channelId !== undefined && (filter !== undefined || params.cursor !== undefined))
    throw new SluiceError('invalid_params', 'channelId lists one channel: no filter or cursor with it');
  return { limit, filter };
}

/** A page and the JSON text of it a reply carries (each row serialized once, as it was fitted). */
export interface ChannelActivityPageReply {
  page: ChannelActivityPage;
  /** `JSON.stringify(page)`, byte for byte. */
  json: string;
}

/**
 * One page of the caller's channels, most recent activity first: at most `limit`, within
 * `budget.bytes` of reply JSON (at least one row, or `too_large`). Served by one range walk of
 * the caller's own memberships (store/ops/channel-activity.ts), so the first page costs the same
 * at 10 channels as at 10,000; each row's members and unread count are read in the same statement.
 * Only the caller's current channels are ever read (I6); the cursor is bound to the caller and
 * the filter.
 */
export async function listChannelsByActivityPage(
  ctx: HostContext,
  actor: Principal,
  params: ChannelActivityParams,
  budget: ChannelPageBudget = { bytes: Number.POSITIVE_INFINITY },
): Promise<ChannelActivityPage> {
  return (await channelActivityPageReply(ctx, actor, params, budget)).page;
}

/** {@link listChannelsByActivityPage} with the page's JSON text. */
export async function channelActivityPageReply(
  ctx: HostContext,
  actor: Principal,
  params: ChannelActivityParams,
  budget: ChannelPageBudget = { bytes: Number.POSITIVE_INFINITY },
): Promise<ChannelActivityPageReply> {
  const { limit, filter } = checkParams(params);
  let rows: ChannelByActivity[];
  let scannedTo: ActivityKey | null = null;
  if (params.channelId !== undefined) {
    const one = await findChannelByActivity(ctx.store.db, actor.id, params.channelId, COLUMNS);
    rows = one ? [one] : [];
  } else {
    const after =
      params.cursor === undefined
        ? undefined
        : (({ a, c }) => ({ activity: a, channelId: c }))(
            readCursor(ctx, ACTIVITY_CURSOR, binding(actor, filter), params.cursor),
          );
    const page = await listChannelsByActivity(ctx.store.db, actor.id, {
      after,
      limit: limit + 1,
      nameContains: filter,
      scan: FILTER_SCAN,
      ...COLUMNS,
    });
    rows = page.rows;
    scannedTo = page.scannedTo;
  }
  const listed = rows.slice(0, limit);
  const cursorAfter = (key: ActivityKey) =>
    issueCursor(ctx, ACTIVITY_CURSOR, binding(actor, filter), { a: key.activity, c: key.channelId });
  const channels: ChannelActivityRow[] = [];
  const texts: string[] = [];
  let rowsBytes = 0;
  for (const [i, c] of listed.entries()) {
    const row: ChannelActivityRow = {
      id: c.id,
      name: c.name,
      kind: c.kind,
      members: c.members,
      memberCount: c.count,
      activity: c.activity,
      unread: countUnread(actor.id, c, c.newest),
    };
    const moreAfter = i + 1 < rows.length || scannedTo !== null;
    const text = JSON.stringify(row);
    const bytes = rowsBytes + (channels.length ? 1 : 0) + utf8Length(text);
    // Room for the cursor this row would end the page with, measured without signing it: its
    // exact length only when the bound would not fit.
    const fits = (cursor: number | null) => pageEnvelopeBytes(cursor) + bytes <= budget.bytes;
    if (
      !fits(moreAfter ? cursorLengthBound(c.id) : null) &&
      !fits(moreAfter ? encodedCursorLength({ a: c.activity, c: c.id }) : null)
    ) {
      if (channels.length === 0)
        throw new SluiceError('too_large', 'the reply budget cannot hold one channel');
      break;
    }
    channels.push(row);
    texts.push(text);
    rowsBytes = bytes;
  }
  const last = channels[channels.length - 1];
  let nextCursor: string | null = null;
  if (last !== undefined && rows.length > channels.length)
    nextCursor = cursorAfter({ activity: last.activity, channelId: last.id });
  else if (scannedTo !== null && channels.length === listed.length) nextCursor = cursorAfter(scannedTo);
  const json = `{"channels":[${texts.join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}`;
  return { page: { channels, nextCursor }, json };
}
