import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, expect, test } from 'vitest';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.js';
import { KNOWN_MIGRATIONS, openPendingReader } from '../../src/surfaces/hooks/sqlite-pending.js';
import { openTestHost, type TestHost, tempHome } from '../support/host.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

test("the direct reader knows every migration of the store (a new one is reviewed for the reader's queries)", async () => {
  expect([...KNOWN_MIGRATIONS].sort()).toEqual(Object.keys(await sqliteMigrations.getMigrations()).sort());
});

test('the direct reader opens only the schema it was written for', async () => {
  const host: TestHost = await openTestHost();
  cleanups.push(() => host.close());
  const reader = openPendingReader(join(host.home, 'sluice.db'));
  expect(reader).not.toBeNull();
  reader?.close();

  const { home, cleanup } = tempHome();
  cleanups.push(cleanup);
  const newer = join(home, 'newer.db');
  const db = new BetterSqlite3(newer);
  db.exec(`create table kysely_migration (name text primary key, timestamp text);
    insert into kysely_migration values ('001_initial', 'x'), ('999_future', 'y');`);
  db.close();
  expect(openPendingReader(newer)).toBeNull();

  const bare = join(home, 'bare.db');
  new BetterSqlite3(bare).close();
  expect(openPendingReader(bare)).toBeNull();
});

test('a file that is not a database is refused as unavailable', async () => {
  const { home, cleanup } = tempHome();
  cleanups.push(cleanup);
  const path = join(home, 'not.db');
  (await import('node:fs')).writeFileSync(path, 'this is not sqlite');
  expect(() => openPendingReader(path)).toThrow(
    /^cannot read the sluice store .*not\.db: file is not a database$/,
  );
});
