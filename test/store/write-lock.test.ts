import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { createGroupCommit } from '../../src/store/group-commit.js';
import { getMeta, setMeta } from '../../src/store/ops/meta.js';
import { openSqliteStore } from '../../src/store/sqlite/connect.js';
import {
  isWriteLockTimeout,
  type LockWaitPolicy,
  retryWhileBusy,
  writeLockTimeout,
} from '../../src/store/sqlite/retry.js';
import type { Store } from '../../src/store/store.js';
import { openTestHost, type TestHost, tempHome } from '../support/host.js';

/** Another process (test/store/lock-holder.mjs) that takes and gives back the write lock on request. */
interface LockHolder {
  /** Resolves once the other process holds the write lock (BEGIN IMMEDIATE). */
  lock(): Promise<void>;
  /** Writes meta row `key` in the held transaction and commits it. */
  release(key: string): Promise<void>;
  stop(): Promise<void>;
}

const holders: ChildProcess[] = [];

async function startLockHolder(path: string): Promise<LockHolder> {
  const child = fork(join(import.meta.dirname, 'lock-holder.mjs'), [path], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  holders.push(child);
  const ask = async (request: Record<string, unknown> | undefined, answer: string) => {
    const reply = once(child, 'message');
    if (request) child.send(request);
    const [message] = (await reply) as [{ type: string }];
    if (message.type !== answer) throw new Error(`lock holder answered ${message.type}, not ${answer}`);
  };
  await ask(undefined, 'ready');
  return {
    lock: () => ask({ type: 'lock' }, 'locked'),
    release: (key) => ask({ type: 'release', key }, 'released'),
    async stop() {
      const exited = once(child, 'exit');
      child.send({ type: 'exit' });
      await exited;
    },
  };
}

/** Watches promises without awaiting them: which have settled so far, and how. */
function watch(promises: Promise<unknown>[]) {
  const outcomes: ('fulfilled' | 'rejected' | 'pending')[] = promises.map(() => 'pending');
  const all = Promise.allSettled(
    promises.map((p, i) =>
      p.then(
        (value) => {
          outcomes[i] = 'fulfilled';
          return value;
        },
        (err) => {
          outcomes[i] = 'rejected';
          throw err;
        },
      ),
    ),
  );
  return { outcomes, all };
}

const turnOfTheLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

afterEach(() => {
  for (const child of holders.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

describe('while another process holds the SQLite write lock', () => {
  let host: TestHost | undefined;
  let store: Store | undefined;
  let cleanup: (() => void) | undefined;
  afterEach(async () => {
    await host?.close();
    await store?.close();
    cleanup?.();
    host = store = cleanup = undefined;
  });

  it('keeps the event loop running, answers reads, and commits every waiting write once it is released', async () => {
    host = await openTestHost();
    const { ctx, owner } = host;
    await host.agent('bot');
    const holder = await startLockHolder(join(host.home, 'sluice.db'));
    await holder.lock();

    const writes = watch([
      // Sends through group commit (the first also creates the DM channel in a transaction).
      ...['one', 'two', 'three'].map((body) => sendMessage(ctx, owner, { to: 'bot', body })),
      ctx.store.transaction((trx) => setMeta(trx, 'in a transaction', 'x')),
      // A single statement outside any transaction (autocommit).
      setMeta(ctx.store.db, 'autocommit', 'x'),
    ]);
    await turnOfTheLoop();
    expect((await resolvePrincipal(ctx, 'bot')).name).toBe('bot');
    await turnOfTheLoop();
    // Still held: nothing may have failed (and nothing can have committed).
    expect(writes.outcomes).toEqual(Array(5).fill('pending'));

    await holder.release('from the other process');
    const settled = await writes.all;
    expect(settled.map((s) => (s.status === 'rejected' ? String(s.reason) : s.status))).toEqual(
      Array(5).fill('fulfilled'),
    );
    const bodies = await ctx.store.db.selectFrom('messages').select('body').orderBy('seq').execute();
    expect(bodies.map((m) => m.body).sort()).toEqual(['one', 'three', 'two']);
    for (const key of ['in a transaction', 'autocommit', 'from the other process'])
      expect(await getMeta(ctx.store.db, key)).toBeDefined();
    await holder.stop();
  });

  it('fails a write that waited past the deadline with one clear line and a code, storing nothing of it', async () => {
    const home = tempHome();
    cleanup = home.cleanup;
    const path = join(home.home, 'sluice.db');
    store = await openSqliteStore({ path, blobDir: join(home.home, 'blobs'), writeLockWaitMs: 200 });
    const opened = store;
    const holder = await startLockHolder(path);
    await holder.lock();

    let membersRun = 0;
    const outcomes = await Promise.allSettled([
      setMeta(opened.db, 'autocommit', 'x'),
      opened.transaction((trx) => setMeta(trx, 'in a transaction', 'x')),
      ...[1, 2, 3].map((n) =>
        opened.sendTransaction(async (db) => {
          membersRun++;
          await setMeta(db, `grouped ${n}`, 'x');
        }),
      ),
    ]);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const err = (outcome as PromiseRejectedResult).reason as { code: string; message: string };
      expect(err.code).toBe('unavailable');
      expect(err.message).toMatch(/^the database is busy: another process held its write lock for [^\n]+$/);
    }
    // The lock never came, so no member of the send group ran (and none ran again alone).
    expect(membersRun).toBe(0);

    await holder.release('from the other process');
    await setMeta(opened.db, 'after release', 'x');
    const keys = await opened.db.selectFrom('meta').select('key').execute();
    expect(keys.map((k) => k.key)).toEqual(
      expect.arrayContaining(['from the other process', 'after release']),
    );
    expect(keys.some((k) => /^(autocommit|grouped|in a transaction)/.test(k.key))).toBe(false);
    await holder.stop();
  });
});

describe('waiting for the lock, step by step', () => {
  const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

  /** A policy on a fake clock: each pause advances it by exactly what was asked. */
  function fakeClock(deadlineMs: number) {
    let clock = 0;
    const pauses: number[] = [];
    const policy: LockWaitPolicy = { deadlineMs, baseMs: 2, maxMs: 50, random: () => 1, now: () => clock };
    const pause = async (ms: number) => {
      pauses.push(ms);
      clock += ms;
    };
    return { policy, pause, pauses };
  }

  it('tries again after growing pauses until the lock comes, lending the connection at each', async () => {
    const { policy, pause, pauses } = fakeClock(10_000);
    // The caller's first try failed already; seven more fail, then the lock is free.
    let tries = 0;
    const result = await retryWhileBusy(
      () => {
        if (++tries <= 7) throw busy();
        return 'done';
      },
      () => true,
      pause,
      policy,
    );
    expect(result).toBe('done');
    // ±50 % jitter at its top (random 1): 1.5 × 2, 4, 8, … capped at 1.5 × 50.
    expect(pauses).toEqual([3, 6, 12, 24, 48, 75, 75, 75]);
  });

  it('fails with the one-line busy error once the deadline has passed, never pausing past it', async () => {
    const { policy, pause, pauses } = fakeClock(1_000);
    const attempt = retryWhileBusy(
      () => {
        throw busy();
      },
      () => true,
      pause,
      policy,
    );
    await expect(attempt).rejects.toThrow(writeLockTimeout(1_000).message);
    await attempt.catch((err) => expect(isWriteLockTimeout(err)).toBe(true));
    expect(pauses.reduce((a, b) => a + b, 0)).toBe(1_000);
  });

  it('does not try again after another error, or once a transaction is open', async () => {
    const { policy, pause } = fakeClock(10_000);
    const constraint = Object.assign(new Error('UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT' });
    await expect(
      retryWhileBusy(
        () => {
          throw constraint;
        },
        () => true,
        pause,
        policy,
      ),
    ).rejects.toBe(constraint);
    const inTransaction = busy();
    await expect(
      retryWhileBusy(
        () => {
          throw inTransaction;
        },
        () => false,
        pause,
        policy,
      ),
    ).rejects.toBe(inTransaction);
  });

  it('rejects every member of a send group whose transaction never got the lock, running none again alone', async () => {
    let transactions = 0;
    const inGroup = createGroupCommit(
      async () => {
        transactions++;
        throw writeLockTimeout(10_000);
      },
      { failsEveryMember: isWriteLockTimeout },
    );
    const outcomes = await Promise.allSettled(['a', 'b', 'c'].map((v) => inGroup(async () => v)));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const o of outcomes) expect(isWriteLockTimeout((o as PromiseRejectedResult).reason)).toBe(true);
    expect(transactions).toBe(1);
  });
});
