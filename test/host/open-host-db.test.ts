// A --db mistake reached openHost as better-sqlite3's TypeError ("the directory does not exist")
// or as a database made in a folder named after a URL's scheme. openHost itself refuses both
// with one line and a code, whoever calls it (the CLI checks earlier; a library caller does not).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { openHost } from '../../src/host/identity/home.js';
import { tempHome } from '../support/host.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function work() {
  const t = tempHome();
  cleanups.push(t.cleanup);
  return t.home;
}

describe('openHost and the database it is given', () => {
  it('refuses a SQLite file whose folder is missing with not_found, creating nothing', async () => {
    const root = work();
    const db = join(root, 'no', 'such', 'folder', 'x.db');
    const home = join(root, 'home');
    const refused = openHost({ home, db });
    await expect(refused).rejects.toBeInstanceOf(SluiceError);
    await expect(refused).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(
        /^no folder .*no\/such\/folder for the database file .*x\.db: check --db/,
      ),
    });
    expect(readdirSync(root)).toEqual([]);
  });

  it('refuses a URL of another scheme with invalid_params, from --db and from SLUICE_DB', async () => {
    const root = work();
    const home = join(root, 'home');
    await expect(openHost({ home, db: 'sqlite:///x.db' })).rejects.toMatchObject({ code: 'invalid_params' });
    const saved = process.env.SLUICE_DB;
    process.env.SLUICE_DB = 'mysql://localhost/x';
    try {
      await expect(openHost({ home })).rejects.toMatchObject({
        code: 'invalid_params',
        message: `--db / SLUICE_DB takes a postgres:// URL or a SQLite file's path, not "mysql://localhost/x"`,
      });
    } finally {
      if (saved === undefined) delete process.env.SLUICE_DB;
      else process.env.SLUICE_DB = saved;
    }
    expect(readdirSync(root)).toEqual([]);
    expect(existsSync('sqlite:')).toBe(false);
  });
});
