import { nowIso } from '../../host/identity/index.js';
import type { LiveHub, SidebarChange, SidebarEvent } from '../../host/live/index.js';
import { liveReadsFor } from '../../host/reads/index.js';
import type { RpcSession } from './methods.js';
import { notification } from './notification.js';

/**
 * One connection's `subscribe {channelList: true}` (docs/rpc.md, "Live notifications"). It starts
 * from nothing — no read of every channel the caller is in, so subscribing costs the same at 10
 * channels as at 10,000 (issue 28) — and learns which channels the client has as they are listed
 * to it (`channel.list` on this connection) or pushed. Every change is judged against the
 * caller's current membership (I6).
 */
export class ChannelListSubscription {
  /** Channels the client was given a row of (listed or pushed): a change to one needs no row. */
  readonly #known = new Set<string>();
  /** Channels the caller left during the subscription and was told so (told once). */
  readonly #gone = new Set<string>();
  readonly #since: string;

  constructor(
    private readonly session: RpcSession,
    private readonly hub: LiveHub,
    /** Queues a change for the outbox (which coalesces and later calls {@link render}). */
    private readonly queue: (channelId: string, change: SidebarChange) => void,
  ) {
    this.#since = nowIso(session.ctx);
  }

  /** The client was given these channels' rows (a `channel.list` page on this connection). */
  noteListed(channelIds: readonly string[]): void {
    for (const id of channelIds) {
      this.#known.add(id);
      this.#gone.delete(id);
    }
  }

  /** A membership, activity or read-mark event: what may concern the caller is queued. */
  onEvent(event: SidebarEvent): void {
    if (event.kind === 'members') this.queue(event.channelId, 'members');
    // Any channel's message: one the client has no row of yet may be the caller's (it moves up).
    else if (event.kind === 'activity') this.queue(event.channelId, 'unread');
    else if (event.principalId === this.session.principal.id && this.#known.has(event.channelId))
      this.queue(event.channelId, 'unread');
  }

  /**
   * What changed for the caller in one channel: it joined (`channel.joined` with the row), left or
   * was removed (`channel.left`), the members changed or a channel the client has no row of got a
   * message (`channel.updated` with the row), or a listed channel's unread count or activity moved
   * (`channel.unread`). A channel the caller is not in and did not leave meanwhile gives nothing.
   */
  async render(channelId: string, change: SidebarChange): Promise<string | null> {
    const reads = liveReadsFor(this.session.ctx);
    const me = this.session.principal;
    const members = await this.hub.shared(`members:${channelId}`, () => reads.currentMemberIds(channelId));
    const known = this.#known.has(channelId);
    if (!members.has(me.id)) {
      this.#known.delete(channelId);
      // Leaving is a members change: a message elsewhere never costs this reader a read.
      if (!known && (change !== 'members' || !(await this.#leftMeanwhile(channelId)))) return null;
      this.#gone.add(channelId);
      return notification('channel.left', { channelId });
    }
    const place = (await reads.sidebarPlaces(me.id, [channelId])).get(channelId);
    if (place === undefined) return null;
    if (known && change !== 'members')
      return notification('channel.unread', { channelId, unread: place.unread, activity: place.activity });
    // The row is the same for every member's page: read once per change, the place per reader.
    const row = await this.hub.shared(`list-row:${channelId}`, () => reads.channelListRow(channelId));
    if (row === null) return null;
    const joined = !known && (await this.#joinedMeanwhile(channelId));
    this.noteListed([channelId]);
    return notification(joined ? 'channel.joined' : 'channel.updated', { channel: { ...row, ...place } });
  }

  /** Too many changes were held: the client re-reads `channel.list`, so nothing is known any more. */
  resync(): string {
    this.#known.clear();
    return notification('channel.list.resync', {});
  }

  async #leftMeanwhile(channelId: string): Promise<boolean> {
    if (this.#gone.has(channelId)) return false;
    const times = await liveReadsFor(this.session.ctx).membershipTimes(channelId, this.session.principal.id);
    return times?.left_at != null && times.left_at >= this.#since;
  }

  async #joinedMeanwhile(channelId: string): Promise<boolean> {
    const times = await liveReadsFor(this.session.ctx).membershipTimes(channelId, this.session.principal.id);
    return times !== undefined && times.joined_at >= this.#since;
  }
}
