// The sidebar's channel list is read page by page (`channel.list`) while live events keep arriving
// (`subscribe {channelList}`). A change that arrives while a load is under way must not be lost:
// the list the load shows is its pages with every change since it began applied in order (a
// channel created after its page was read would otherwise appear only on the next reload).

import type { ChannelSummary } from '../wire.js';

/** One live change to the list (a join, a leave, an unread count). */
export type ListChange = (list: ChannelSummary[]) => ChannelSummary[];

export class ChannelListLoads {
  #latest = 0;
  #watches = 0;
  readonly #changes = new Map<number, ListChange[]>();

  /** A load starts: changes from now on are kept for it. */
  begin(): number {
    this.#latest += 1;
    this.#changes.set(this.#latest, []);
    return this.#latest;
  }

  /** A live change arrived: every load under way will apply it to its pages. */
  record(change: ListChange): void {
    for (const changes of this.#changes.values()) changes.push(change);
  }

  /**
   * The load's pages are all in: the list to show (its pages, then the changes since it began),
   * or null when a newer load has begun since (only the newest load's result is shown).
   */
  finish(load: number, pages: ChannelSummary[]): ChannelSummary[] | null {
    const changes = this.#changes.get(load) ?? [];
    this.#changes.delete(load);
    if (load !== this.#latest) return null;
    return changes.reduce((list, change) => change(list), pages);
  }

  /**
   * A page that adds to the list (not a load that replaces it) starts: the changes from now on,
   * handed over when the returned function is called, so they can be applied again to its rows.
   */
  watch(): () => ListChange[] {
    this.#watches += 1;
    const key = -this.#watches;
    this.#changes.set(key, []);
    return () => {
      const changes = this.#changes.get(key) ?? [];
      this.#changes.delete(key);
      return changes;
    };
  }

  /** The load failed; true when it was the newest (its failure is worth showing). */
  fail(load: number): boolean {
    this.#changes.delete(load);
    return load === this.#latest;
  }
}
