import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BACKSTOP_AUTOCHECKPOINT_PAGES,
  COMMITS_BEFORE_BACKGROUND,
  COMMITS_PER_ROUND,
  lazyCheckpointer,
  startCheckpointer,
  WAL_SIZE_LIMIT_BYTES,
} from '../../src/store/sqlite/checkpointer.js';

describe('the background checkpointer', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function walDatabase() {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-ckpt-'));
    const path = join(dir, 'db.sqlite');
    const db = new BetterSqlite3(path);
    db.pragma('journal_mode = WAL');
    // Only the worker may copy the WAL back: the file grows only when it did.
    db.pragma('wal_autocheckpoint = 0');
    db.exec('create table t (x text)');
    cleanups.push(() => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return { db, path };
  }

  // Measured: SQLite's automatic checkpoint ran inside one send in about 50 and made it take
  // 10–20 ms (commit 0.55 ms on average, 0.26 ms with the checkpoint off the commit path).
  it('copies the WAL into the database file from its own thread once poked', async () => {
    const { db, path } = walDatabase();
    const before = statSync(path).size;
    const insert = db.prepare('insert into t values (?)');
    for (let i = 0; i < 200; i++) insert.run('x'.repeat(3000));
    expect(statSync(path).size).toBe(before);
    const checkpointer = startCheckpointer({ path, synchronous: 'NORMAL' });
    cleanups.push(() => checkpointer.close());
    checkpointer.poke();
    await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(before + 200 * 3000), {
      timeout: 10_000,
      interval: 20,
    });
    expect(db.prepare('select count(*) as n from t').get()).toEqual({ n: 200 });
  });

  // Measured: a host sending flat out (about 2,500 sends a second, 15 WAL pages each) filled the
  // WAL to the backstop within one 200 ms interval, so every 450th send copied the WAL itself
  // (60–75 ms) and the next cut the file back (10 ms).
  it('copies without waiting out its interval once a round of commits has come', async () => {
    const { db, path } = walDatabase();
    const before = statSync(path).size;
    // An interval no test waits out: only the count of commits can wake the worker in time.
    const checkpointer = startCheckpointer({ path, synchronous: 'NORMAL', intervalMs: 3_600_000 });
    cleanups.push(() => checkpointer.close());
    const insert = db.prepare('insert into t values (?)');
    for (let i = 0; i < COMMITS_PER_ROUND; i++) {
      insert.run('x'.repeat(3000));
      checkpointer.poke();
    }
    await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(before + COMMITS_PER_ROUND * 3000), {
      timeout: 10_000,
      interval: 20,
    });
    expect(db.prepare('select count(*) as n from t').get()).toEqual({ n: COMMITS_PER_ROUND });
  });

  it('leaves the backstop below the WAL size limit, so a WAL that starts over is not cut back', () => {
    const frameBytes = 4096 + 24; // a 4 KiB page and its frame header
    expect(BACKSTOP_AUTOCHECKPOINT_PAGES * frameBytes).toBeLessThan(WAL_SIZE_LIMIT_BYTES);
  });

  it('starts only after enough commits, then raises the connection’s own threshold to the backstop', async () => {
    const { path } = walDatabase();
    const thresholds: number[] = [];
    const lazy = lazyCheckpointer({
      path,
      synchronous: 'FULL',
      setAutocheckpoint: (p) => thresholds.push(p),
    });
    cleanups.push(() => lazy.close());
    for (let i = 1; i < COMMITS_BEFORE_BACKGROUND; i++) lazy.poke();
    expect(thresholds).toEqual([]);
    lazy.poke();
    expect(thresholds).toEqual([BACKSTOP_AUTOCHECKPOINT_PAGES]);
    lazy.poke();
    expect(thresholds).toHaveLength(1);
  });

  // Measured: a process that had committed 64 times and then closed its store exited with code 13
  // (a top-level await never settled) before the next line ran: the thread does not keep the
  // process alive, and waiting for it to end was all that was left to do.
  it('a process that closes its store after many commits goes on to its next line', () => {
    const home = mkdtempSync(join(tmpdir(), 'sluice-ckpt-home-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const child = spawnSync(
      process.execPath,
      [join(import.meta.dirname, 'close-after-commits.mjs'), home, String(COMMITS_BEFORE_BACKGROUND + 16)],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect({ status: child.status, stdout: child.stdout, stderr: child.stderr }).toEqual({
      status: 0,
      stdout: 'closed\n',
      stderr: '',
    });
  });

  it('closing stops the thread; pokes after that are ignored', async () => {
    const { path } = walDatabase();
    const checkpointer = startCheckpointer({ path, synchronous: 'NORMAL' });
    await expect(checkpointer.close()).resolves.toBeUndefined();
    expect(() => checkpointer.poke()).not.toThrow();
    await expect(checkpointer.close()).resolves.toBeUndefined();
  });

  it('a database it cannot open leaves the host unharmed (the backstop stays in charge)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-ckpt-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const checkpointer = startCheckpointer({ path: join(dir, 'missing.sqlite'), synchronous: 'NORMAL' });
    expect(() => checkpointer.poke()).not.toThrow();
    // The thread ended by itself (closing waits for its exit) and made no database file.
    await expect(checkpointer.close()).resolves.toBeUndefined();
    expect(existsSync(join(dir, 'missing.sqlite'))).toBe(false);
  });
});
