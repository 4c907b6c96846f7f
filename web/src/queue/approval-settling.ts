// Which approval cards the queue page shows (docs/approvals.md, "On the web page"): the pending
// requests, and those decided by someone else or by the timeout while shown, kept until their
// person dismisses them, so a decision made elsewhere never makes a card vanish under a click.
// And what the sidebar counts as waiting: pending requests whose time has not run out.
// No DOM types: the Node tests import it.

import type { Approval } from '../wire.js';

/**
 * A card on the page: a request as the host gave it, or, with `decidedUnseen`, one shown pending
 * that left the pending list while the page was not hearing pushes and whose outcome could not be
 * read back (more decided requests than one `approval.list` returns, or the read failed).
 */
export type ShownApproval = Approval & { decidedUnseen?: true };

/** Whether a card is decided: it loses Allow and Deny and offers Dismiss. */
export function isSettled(card: ShownApproval): boolean {
  return card.status !== 'pending' || card.decidedUnseen === true;
}

/**
 * The cards after an `approval.changed` push: a pending request is added or updated; one decided
 * by this person (here, in another tab, from the CLI) goes; one decided by anyone else, or by the
 * timeout, stays, shown as decided, until dismissed.
 */
export function applyApprovalChange(
  cards: readonly ShownApproval[],
  approval: Approval,
  me: string,
): ShownApproval[] {
  const at = cards.findIndex((a) => a.id === approval.id);
  if (approval.status !== 'pending' && approval.decidedBy === me)
    return at < 0 ? [...cards] : cards.filter((a) => a.id !== approval.id);
  // A push for a request this page never showed pending (decided before the card loaded) adds nothing.
  if (approval.status !== 'pending' && at < 0) return [...cards];
  if (at < 0) return [...cards, approval];
  // In place: the card keeps its position and its state (the person's own attempt's error).
  return cards.map((a, i) => (i === at ? approval : a));
}

/**
 * The ids of cards shown pending that a fresh `approval.list {status: "pending"}` no longer holds:
 * decided (or timed out) while the page was not hearing pushes. Their outcome is read back with
 * `approval.list {status: "all"}` before merging, so they do not vanish.
 */
export function vanishedPending(cards: readonly ShownApproval[], listed: readonly Approval[]): string[] {
  const ids = new Set(listed.filter((a) => a.status === 'pending').map((a) => a.id));
  return cards.filter((a) => !isSettled(a) && !ids.has(a.id)).map((a) => a.id);
}

/**
 * The cards after `approval.list {status: "pending"}` answered (at open, after a reconnect or a
 * resync): what it lists, plus the decided cards still waiting to be dismissed. `finals` holds,
 * for each id `vanishedPending` named, the request as the host now gives it, or null when it could
 * not be read. A vanished card decided by this person goes (as with a push); one decided by anyone
 * else or by the timeout stays as decided; one whose outcome is unknown stays as "decided
 * elsewhere". A card not asked about (pushed after the list was asked for) stays as it is.
 */
export function mergeListedApprovals(
  cards: readonly ShownApproval[],
  listed: readonly Approval[],
  me: string,
  finals: ReadonlyMap<string, Approval | null> = new Map(),
): ShownApproval[] {
  const pending = listed.filter((a) => a.status === 'pending');
  const ids = new Set(pending.map((a) => a.id));
  const kept: ShownApproval[] = [];
  for (const card of cards) {
    if (ids.has(card.id)) continue;
    if (isSettled(card) || !finals.has(card.id)) {
      kept.push(card);
      continue;
    }
    const final = finals.get(card.id) ?? null;
    if (final === null) kept.push({ ...card, decidedUnseen: true });
    else if (final.status === 'pending' || final.decidedBy !== me) kept.push(final);
  }
  return [...pending, ...kept];
}

/** How a decided request reads on its card: who decided and what. */
export function settledLabel(approval: ShownApproval): string {
  if (approval.decidedUnseen) return 'Decided elsewhere while this page was disconnected';
  const by = approval.decidedBy ?? 'another person';
  if (approval.status === 'allowed')
    return approval.kind === 'user_input' ? `Answered by ${by}` : `Allowed by ${by}`;
  if (approval.status === 'denied') return `Denied by ${by}`;
  return 'Expired: nobody answered in time, so it was denied';
}

/** A pending request whose time ran out reads as expired, even before the host swept it. */
export function asExpired(approval: Approval): Approval {
  return { ...approval, status: 'expired', decidedBy: null, decidedAt: approval.expiresAt };
}

/** A pending request as the sidebar counts it. */
export interface Waiting {
  agent: string;
  /** When the host's timeout denies it (ms since the epoch). */
  expiresAt: number;
}

/**
 * Pending requests by id → how many each agent waits on at `now`. One whose time ran out is not
 * counted even while the host still lists it pending (no driver left to deny it): nobody can
 * decide it any more.
 */
export function countByAgent(pending: ReadonlyMap<string, Waiting>, now: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { agent, expiresAt } of pending.values())
    if (expiresAt > now) counts.set(agent, (counts.get(agent) ?? 0) + 1);
  return counts;
}

/** The soonest time a counted request runs out, after `now`; null when none will. */
export function nextExpiry(pending: ReadonlyMap<string, Waiting>, now: number): number | null {
  let soonest: number | null = null;
  for (const { expiresAt } of pending.values())
    if (expiresAt > now && (soonest === null || expiresAt < soonest)) soonest = expiresAt;
  return soonest;
}
