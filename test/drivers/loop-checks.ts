// What the driver loop tests wait on: the loop's own looks at the queue (its onCheck), not sleeps.
import type { HostContext } from '../../src/host/identity/context.js';
import type { LoopCheck } from '../../src/surfaces/drivers/loop.js';

/**
 * The loop's looks at the queue, in the order they began, each with the number of turns reported
 * before it: "nothing happened" is a look that began after the change and decided to let it be
 * (nothing dispatched, nothing steered), instead of a pause that hopes to be long enough.
 */
export class LoopChecks {
  readonly seen: (LoopCheck & { afterTurns: number })[] = [];
  private waiters: (() => void)[] = [];

  record(check: LoopCheck, afterTurns: number): void {
    this.seen.push({ ...check, afterTurns });
    for (const wake of this.waiters.splice(0)) wake();
  }
  /**
   * Runs `write` and marks the last commit it announced: a look that begins after the mark saw
   * what it wrote (the loop may begin one between the commit and `write` resolving).
   */
  async markAfter<T>(ctx: HostContext, write: () => Promise<T>): Promise<{ value: T; mark: number }> {
    let mark = -1;
    const onCommit = () => {
      mark = this.seen.length;
    };
    ctx.localCommitListeners.add(onCommit);
    try {
      const value = await write();
      if (mark < 0) throw new Error('the write announced no commit');
      return { value, mark };
    } finally {
      ctx.localCommitListeners.delete(onCommit);
    }
  }
  /** What the first look of `loop` that began at or after `from` (and matches `also`) decided. */
  async decisionFrom(
    from: number,
    loop: LoopCheck['loop'],
    also: (c: { afterTurns: number }) => boolean = () => true,
  ): Promise<string> {
    for (;;) {
      const found = this.seen.slice(from).find((c) => c.loop === loop && also(c));
      if (found) return found.decided;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

/**
 * Waits on what the client and the loop report (a turn begun, a steer, a turn settled): each
 * report calls notify(), which re-checks the waits, so none of them polls. The deadline only
 * bounds a failure (it is long for a loaded machine).
 */
export class Progress {
  private waiters = new Set<() => void>();

  notify(): void {
    for (const wake of [...this.waiters]) wake();
  }
  until(ready: () => boolean, what: string | (() => string), timeoutMs = 20_000): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const wake = () => {
        if (!ready()) return;
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        reject(new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`));
      }, timeoutMs);
      this.waiters.add(wake);
    });
  }
}
