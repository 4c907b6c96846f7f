import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { backendsUnderTest, dropSchema, freshSchemaUrl, withAdmin } from '../conformance/backend.js';
import { REPO_ROOT, runCli, runCommand, SLUICE_BIN, tempHome } from '../support/host.js';

/** True once a process on `schema` has opened its store (see the test below) and sits idle. */
async function storeOpened(schema: string): Promise<boolean> {
  return withAdmin(async (c) => {
    const r = await c.query<{ opened: number; migrating: number }>(
      `select count(*) filter (where state = 'idle' and query ~ '"(meta|principals)"')::int as opened,
              count(*) filter (where query ilike '%advisory%' or query ilike '%current_schema%')::int as migrating
         from pg_stat_activity where application_name = $1`,
      [schema],
    );
    return (r.rows[0]?.opened ?? 0) > 0 && r.rows[0]?.migrating === 0;
  });
}

/** Issue 22 item 5: internal errors are logged in the home in use; a store lost mid-command is `unavailable`. */
describe('the CLI when things outside it fail (built CLI: npm run build first)', () => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function homes() {
    const work = tempHome();
    cleanups.push(work.cleanup);
    const home = join(work.home, 'home');
    // HOME points elsewhere: nothing may land in its ~/.sluice.
    const elsewhere = join(work.home, 'user');
    mkdirSync(elsewhere);
    return { home, elsewhere, env: { HOME: elsewhere, SLUICE_HOME: '' } };
  }

  it('a bug after a command ran under --home is logged in that home, not in ~/.sluice', async () => {
    const { home, elsewhere, env } = homes();
    expect((await runCli(['--home', home, 'init'], { home: '', env })).code).toBe(0);
    // The uncaught-error path (`serve`'s sockets, timers): main's crash handler reports it.
    const script = `
      const { main } = await import(${JSON.stringify(join(REPO_ROOT, 'dist/src/surfaces/cli/main.js'))});
      await main(['node', 'sluice', '--home', ${JSON.stringify(home)}, 'channel', 'ls']);
      setTimeout(() => { throw new Error('a bug after the command'); }, 0);`;
    const r = await runCommand(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ...env },
    });
    expect(r.code).toBe(70);
    const log = join(home, 'logs', 'errors.log');
    expect(r.stderr).toBe(
      `sluice: internal error ${/E[0-9a-f]{8}/.exec(r.stderr)?.[0]} (a bug; details in ${log})\n`,
    );
    expect(readFileSync(log, 'utf8')).toContain('a bug after the command');
    expect(existsSync(join(elsewhere, '.sluice'))).toBe(false);
  });

  it('a bug in a command under --home is logged in that home (a table gone under the store)', async () => {
    const { home, elsewhere, env } = homes();
    expect((await runCli(['--home', home, 'init'], { home: '', env })).code).toBe(0);
    const db = new Database(join(home, 'sluice.db'));
    db.pragma('foreign_keys = OFF');
    db.exec('drop table channels');
    db.close();
    const r = await runCli(['--home', home, 'channel', 'ls'], { home: '', env });
    expect(r.code).toBe(70);
    expect(r.stderr).toContain(join(home, 'logs', 'errors.log'));
    expect(existsSync(join(home, 'logs', 'errors.log'))).toBe(true);
    expect(existsSync(join(elsewhere, '.sluice'))).toBe(false);
  });

  it('a database file that is not one (damaged, or --db naming the wrong file): unavailable, one line, the file unchanged', async () => {
    const { home, env } = homes();
    expect((await runCli(['--home', home, 'init'], { home: '', env })).code).toBe(0);
    const notADatabase = 'this is not a database, '.repeat(100);
    const other = join(home, 'notes.txt');
    writeFileSync(other, notADatabase);
    writeFileSync(join(home, 'sluice.db'), notADatabase);
    for (const args of [
      ['--home', home, 'channel', 'ls'],
      ['--home', home, 'init'],
      ['--home', home, '--db', other, 'agent', 'ls'],
      ['--home', home, '--db', other, 'init'],
    ]) {
      const r = await runCli(args, { home: '', env });
      expect([r.code, r.stdout, r.stderr]).toEqual([
        1,
        '',
        'sluice: unavailable: the database file is damaged or is not a SQLite database (SQLITE_NOTADB): file is not a database\n',
      ]);
    }
    expect(readFileSync(other, 'utf8')).toBe(notADatabase);
    expect(readFileSync(join(home, 'sluice.db'), 'utf8')).toBe(notADatabase);
    expect(existsSync(join(home, 'logs', 'errors.log'))).toBe(false);
  });

  it.skipIf(!backendsUnderTest().includes('postgres'))(
    'a PostgreSQL schema dropped mid-command: unavailable (exit 1, one line naming the cause), not 70',
    async () => {
      const { home, env } = homes();
      const { url, schema } = freshSchemaUrl('cli_store_gone');
      cleanups.push(() => dropSchema(schema));
      const db = ['--home', home, '--db', url];
      expect((await runCli([...db, 'init'], { home: '', env })).code).toBe(0);
      expect((await runCli([...db, 'agent', 'add', 'bot'], { home: '', env })).code).toBe(0);

      // The send opens the store, then reads its body from stdin: the schema goes while it waits.
      const child = spawn(process.execPath, [SLUICE_BIN, ...db, 'message', 'send', 'bot', '-m', '-'], {
        env: { ...process.env, ...env, SLUICE_AS: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      cleanups.push(() => void child.kill('SIGKILL'));
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      // Opened: the migrations' lock connection is gone and the pool's last statement was the
      // cursor secret's (the end of opening a host) or the sender's lookup; the send now waits
      // for its body.
      const deadline = Date.now() + 30_000;
      while (!(await storeOpened(schema))) {
        if (Date.now() > deadline) {
          const seen = await withAdmin((c) =>
            c.query('select state, query from pg_stat_activity where application_name = $1', [schema]),
          );
          throw new Error(`the send never opened its store: ${stderr} ${JSON.stringify(seen.rows)}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      await dropSchema(schema);
      child.stdin.end('hello');
      expect(await exited).toBe(1);
      expect(stderr).toMatch(/^sluice: unavailable: the database schema is gone \((42P01|3F000)\): .*\n$/);
    },
    60_000,
  );
});
