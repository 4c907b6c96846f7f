import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { openHost } from '../../src/host/identity/home.js';
import { tempHome } from '../support/host.js';
import { RpcError, retryStaleSocket, type ServeProcess, serialized, staleSocket } from './hosts.js';

/** One write transaction that yields to the event loop while it holds SQLite's write lock. */
const writeAcrossTurns = (ctx: HostContext) =>
  ctx.store.transaction(async (trx) => {
    await trx.selectFrom('principals').select('id').execute();
    await new Promise((resolve) => setImmediate(resolve));
    await trx.selectFrom('principals').select('id').execute();
  });

describe('serialized (the multihost test process stands in for several agent processes)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('runs calls one at a time, in order, and goes on after one fails', async () => {
    const run = serialized();
    const log: string[] = [];
    const slow = run(async () => {
      log.push('a start');
      await new Promise((resolve) => setImmediate(resolve));
      log.push('a end');
      return 'a';
    });
    const failing = run(async () => {
      log.push('b');
      throw new Error('b failed');
    });
    const last = run(async () => {
      log.push('c');
      return 'c';
    });
    expect(await slow).toBe('a');
    await expect(failing).rejects.toThrow('b failed');
    expect(await last).toBe('c');
    expect(log).toEqual(['a start', 'a end', 'b', 'c']);
  });

  it("keeps two SQLite connections of one thread from waiting on each other's write lock", async () => {
    const t = tempHome('sluice-serialized-');
    cleanups.push(t.cleanup);
    const db = join(t.home, 'shared.db');
    const one = await openHost({ home: t.home, db, durability: 'normal' });
    cleanups.push(() => one.store.close());
    const two = await openHost({ home: t.home, db, durability: 'normal' });
    cleanups.push(() => two.store.close());
    // Unserialized, the second BEGIN IMMEDIATE blocks this thread while the first transaction,
    // which only this thread can finish, holds the lock: a 10 s stall, then SQLITE_BUSY
    // (measured: 11.7 s, "database is locked"). Taking turns, both commit at once.
    const run = serialized();
    await expect(
      Promise.all([run(() => writeAcrossTurns(one)), run(() => writeAcrossTurns(two))]),
    ).resolves.toHaveLength(2);
  });
});

describe('retryStaleSocket (a keep-alive socket the host closed while the test process lagged)', () => {
  const failed = (code: string) =>
    new TypeError('fetch failed', { cause: Object.assign(new Error(code), { code }) });
  const host = (exit: string | undefined) => ({ exitStatus: () => exit }) as ServeProcess;

  it.each([
    ['UND_ERR_SOCKET', true],
    ['ECONNRESET', true],
    ['EPIPE', true],
    ['ECONNREFUSED', false],
    ['ENOTFOUND', false],
  ])('counts %s as a stale socket: %s', (code, stale) => {
    expect(staleSocket(failed(code))).toBe(stale);
    expect(staleSocket(new RpcError('connection', `fetch failed (${code})`, code))).toBe(stale);
  });

  it('is not a stale socket when the host answered (an RPC error), whatever the text', () => {
    expect(staleSocket(new RpcError('unavailable', 'ECONNRESET'))).toBe(false);
  });

  it('repeats a call once after a stale socket while the host runs, and says so', async () => {
    const errors = [failed('UND_ERR_SOCKET')];
    const retries: unknown[] = [];
    const call = async () => {
      const err = errors.shift();
      if (err) throw err;
      return 'answered';
    };
    expect(await retryStaleSocket(host(undefined), call, (err) => retries.push(err))).toBe('answered');
    expect(retries).toHaveLength(1);
  });

  it('does not repeat for a host that ended, a refused connection, or a second stale socket', async () => {
    const always = (code: string) => async () => {
      throw failed(code);
    };
    await expect(retryStaleSocket(host('exit 70; stderr: …'), always('ECONNRESET'))).rejects.toThrow(
      'fetch failed',
    );
    let calls = 0;
    const refused = async () => {
      calls++;
      throw failed('ECONNREFUSED');
    };
    await expect(retryStaleSocket(host(undefined), refused)).rejects.toThrow('fetch failed');
    expect(calls).toBe(1);
    calls = 0;
    const stale = async () => {
      calls++;
      throw failed('ECONNRESET');
    };
    await expect(retryStaleSocket(host(undefined), stale)).rejects.toThrow('fetch failed');
    expect(calls).toBe(2);
  });
});
