import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import type { MemberPage } from '../../core/wire/index.js';
import { countActiveMembers, listActiveMembersPage, type MemberEntry } from '../../store/ops/member-pages.js';
import { requireMemberChannel } from '../identity/access.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { issueCursor, NAME_CURSOR, readCursor } from '../reads/cursors.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { MemberPage };

/** Largest and default `channel.members` page. */
export const MAX_MEMBER_PAGE = 200;

const memberPageBinding = (actor: Principal, channelId: string) => ({
  caller: actor.id,
  filter: 'channel.members',
  target: channelId,
});

/**
 * One page of a channel's current members in name order, for a current member (I6, rechecked on
 * every page): at most `limit`, and only as many as keep the reply's JSON within `budgetBytes`.
 * The cursor is bound to the caller and the channel and carries the last name listed.
 */
export async function channelMembersPage(
  ctx: HostContext,
  actor: Principal,
  params: { channelId: string; cursor?: string | undefined; limit?: number | undefined },
  budgetBytes = Number.POSITIVE_INFINITY,
): Promise<MemberPage> {
  const limit = params.limit ?? MAX_MEMBER_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_MEMBER_PAGE)
    throw new SluiceError('invalid_params', `limit must be an integer from 1 to ${MAX_MEMBER_PAGE}`, {
      field: 'limit',
    });
  const channel = await requireMemberChannel(ctx.store.db, actor, params.channelId);
  const binding = memberPageBinding(actor, channel.id);
  const afterName =
    params.cursor === undefined ? undefined : readCursor(ctx, NAME_CURSOR, binding, params.cursor).after;
  const rows = await listActiveMembersPage(ctx.store.db, channel.id, { afterName, limit: limit + 1 });
  const memberCount = await countActiveMembers(ctx.store.db, channel.id);
  const cursorAfter = (name: string) => issueCursor(ctx, NAME_CURSOR, binding, { after: name });
  const members: MemberEntry[] = [];
  let rowsBytes = 0;
  for (const [i, row] of rows.slice(0, limit).entries()) {
    const member = { id: row.id, name: row.name, kind: row.kind };
    const bytes = rowsBytes + (members.length ? 1 : 0) + utf8Length(JSON.stringify(member));
    const cursor = i + 1 < rows.length ? cursorAfter(row.name) : null;
    const frame = { channelId: channel.id, members: [], memberCount, nextCursor: cursor };
    if (utf8Length(JSON.stringify(frame)) + bytes > budgetBytes) {
      if (members.length === 0) throw new SluiceError('too_large', 'the reply budget cannot hold one member');
      break;
    }
    members.push(member);
    rowsBytes = bytes;
  }
  const last = members.at(-1);
  const more = last !== undefined && rows.length > members.length;
  return { channelId: channel.id, members, memberCount, nextCursor: more ? cursorAfter(last.name) : null };
}
