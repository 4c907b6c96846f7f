import { CompiledQuery } from 'kysely';
import type { Db } from './store.js';

type Work<T> = (trx: Db) => Promise<T>;
type RunTransaction = <T>(fn: Work<T>) => Promise<T>;

interface Member {
  fn: Work<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

export interface GroupCommitOptions {
  /** Most members in one transaction; the rest wait for the next. */
  maxGroup?: number;
  /**
   * Errors of a failed group that no member caused and that running alone would only meet again
   * (SQLite: the write lock never came, so no member ran): every member rejects with it at once.
   */
  failsEveryMember?: (err: unknown) => boolean;
}

const SAVEPOINT = CompiledQuery.raw('savepoint sluice_group_member');
const RELEASE = CompiledQuery.raw('release savepoint sluice_group_member');
const ROLLBACK_TO = CompiledQuery.raw('rollback to savepoint sluice_group_member');

/**
 * Group commit: calls that arrive while a group is committing (or in the same turn of the event
 * loop as an idle one) run together in one transaction, so they share one commit and one fsync.
 * The window adapts by itself: a lone call starts at once (one `setImmediate`, no timer), and under
 * load each group is whatever arrived during the previous commit. Each member runs under its own
 * savepoint, so one that throws is rolled back alone and rejects alone; every member resolves
 * only after the group's commit. If the transaction fails as a whole (the commit itself, or an
 * error that undid the transaction), nothing of it is stored and each member runs again alone —
 * unless `failsEveryMember` says the failure was the group's as a whole.
 */
export function createGroupCommit(
  runTransaction: RunTransaction,
  options: GroupCommitOptions = {},
): <T>(fn: Work<T>) => Promise<T> {
  const maxGroup = options.maxGroup ?? 64;
  const queue: Member[] = [];
  let busy = false;

  const runAlone = (m: Member) => runTransaction(m.fn).then(m.resolve, m.reject);

  const commitGroup = async (group: Member[]): Promise<void> => {
    if (group.length === 1) return runAlone(group[0] as Member);
    const outcomes: Outcome[] = [];
    try {
      await runTransaction(async (trx) => {
        outcomes.length = 0;
        for (const member of group) {
          await trx.executeQuery(SAVEPOINT);
          try {
            outcomes.push({ ok: true, value: await member.fn(trx) });
          } catch (err) {
            // A failure that undid the whole transaction (SQLite does so on a full disk) leaves no
            // savepoint: the member's own error, which names the cause, fails the group.
            await trx.executeQuery(ROLLBACK_TO).catch(() => Promise.reject(err));
            outcomes.push({ ok: false, err });
          }
          await trx.executeQuery(RELEASE);
        }
      });
    } catch (err) {
      if (options.failsEveryMember?.(err)) {
        for (const member of group) member.reject(err);
        return;
      }
      // Nothing of the group committed: each member gets its own transaction (and its own error).
      await Promise.all(group.map(runAlone));
      return;
    }
    group.forEach((member, i) => {
      const outcome = outcomes[i] as Outcome;
      if (outcome.ok) member.resolve(outcome.value);
      else member.reject(outcome.err);
    });
  };

  const drain = async () => {
    try {
      while (queue.length > 0) await commitGroup(queue.splice(0, maxGroup));
    } finally {
      busy = false;
    }
  };

  return <T>(fn: Work<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (busy) return;
      busy = true;
      // One turn of the event loop lets the calls already under way join this group.
      setImmediate(() => void drain());
    });
}
