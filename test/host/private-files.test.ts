// Issue 12, "private files": a home that already existed kept 0755 and the database, WAL, blobs and
// logs were 0644, so another local user read every message and the cursor secret. Everything
// Sluice creates is now private to the user, through the CLI (umask 077 at the entry point) and
// through the library alone (explicit modes, whatever the process umask).
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { initHome, openHost, securePrivateHome } from '../../src/host/identity/home.js';
import { addPrincipal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { materializeAttachment } from '../../src/host/media/materialize.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { startJsonLineChild } from '../../src/surfaces/drivers/child.js';
import { backendsUnderTest, dropSchema, freshSchemaUrl } from '../conformance/backend.js';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

/** Every path under `root` (itself included) whose mode lets group or others in, with its mode. */
function openToOthers(root: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const st = statSync(path);
    if ((st.mode & 0o077) !== 0) found.push(`${path} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(root);
  return found;
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function freshHomePath(): string {
  const { home, cleanup } = tempHome('sluice-private-');
  cleanups.push(cleanup);
  return join(home, 'home'); // does not exist yet: Sluice creates it
}

describe('private files through the library, whatever the process umask', () => {
  for (const backend of backendsUnderTest()) {
    it(`a new home, its database, blobs and materialised copies are 0700/0600 (${backend})`, async () => {
      const previous = process.umask(0o022);
      cleanups.push(() => void process.umask(previous));
      const home = freshHomePath();
      const pg = backend === 'postgres' ? freshSchemaUrl('private') : undefined;
      if (pg) cleanups.push(() => dropSchema(pg.schema));
      const ctx = await openHost({ home, db: pg?.url, durability: 'normal', pollMs: 10 });
      cleanups.push(() => ctx.store.close());
      await initHome(ctx);
      const owner = await resolvePrincipal(ctx, 'owner');
      const helper = await addPrincipal(ctx, { name: 'helper', kind: 'agent' });
      const media = await putMedia(ctx, owner, new Uint8Array(PNG), 'dot.png');
      await sendMessage(ctx, owner, {
        to: 'helper',
        body: 'see attached',
        attachmentIds: [media.attachment_id],
      });
      const copy = await materializeAttachment(ctx, helper, media.attachment_id);

      expect(mode(home)).toBe('700');
      expect(mode(copy)).toBe('600');
      if (backend === 'sqlite') {
        expect(mode(join(home, 'sluice.db'))).toBe('600');
        expect(existsSync(join(home, 'sluice.db-wal'))).toBe(true);
        expect(mode(join(home, 'sluice.db-wal'))).toBe('600');
        expect(existsSync(join(home, 'blobs'))).toBe(true);
      }
      expect(openToOthers(home)).toEqual([]);
    });
  }

  it('an existing home open to others is tightened to 0700 with a one-line notice', () => {
    const home = freshHomePath();
    mkdirSync(home);
    chmodSync(home, 0o755);
    const lines: string[] = [];
    securePrivateHome(home, (line) => lines.push(line));
    expect(mode(home)).toBe('700');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/mode 0755\); tightened to 0700$/);
    expect(lines[0]).not.toContain('\n');
    securePrivateHome(home, (line) => lines.push(line));
    expect(lines).toHaveLength(1); // a private home: nothing to say
  });
});

describe('private files through the CLI (umask 077 at the entry point)', () => {
  it('init, send with an attachment and serve leave nothing readable by other users', async () => {
    const home = freshHomePath();
    const env = { SLUICE_USER_UMASK: '' };
    expect((await runCli(['init'], { home, env })).code).toBe(0);
    expect((await runCli(['agent', 'add', 'helper'], { home, env })).code).toBe(0);
    const file = join(home, '..', 'dot.png');
    writeFileSync(file, PNG);
    chmodSync(file, 0o644);
    const sent = await runCli(['message', 'send', 'helper', '-m', 'see attached', '--attach', file], {
      home,
      env,
    });
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);

    // serve: run until it prints its login link, then stop it.
    const serve = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => serve.on('close', resolve));
    await new Promise<void>((resolve, reject) => {
      let out = '';
      serve.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Login link')) resolve();
      });
      serve.on('close', () => reject(new Error(`serve exited early: ${out}`)));
    });
    serve.kill('SIGTERM');
    await exited;

    expect(readdirSync(join(home, 'blobs')).length).toBeGreaterThan(0);
    expect(openToOthers(home)).toEqual([]);
  });

  it('a home the CLI finds open to others is tightened, with one line on stderr', async () => {
    const home = freshHomePath();
    mkdirSync(home);
    chmodSync(home, 0o755);
    const result = await runCli(['init'], { home });
    expect(result.code).toBe(0);
    expect(mode(home)).toBe('700');
    const notices = result.stderr.split('\n').filter((l) => l.includes('tightened to 0700'));
    expect(notices).toEqual([`sluice: ${home} was open to other local users (mode 0755); tightened to 0700`]);
  });
});

describe('the agent client a driver starts', () => {
  it("gets the user's own umask back, not Sluice's 077", async () => {
    const previous = process.umask(0o077);
    const saved = process.env.SLUICE_USER_UMASK;
    process.env.SLUICE_USER_UMASK = '22';
    cleanups.push(() => {
      process.umask(previous);
      if (saved === undefined) delete process.env.SLUICE_USER_UMASK;
      else process.env.SLUICE_USER_UMASK = saved;
    });
    const child = startJsonLineChild(
      process.execPath,
      ['-e', 'console.log(JSON.stringify(process.umask()))'],
      { cwd: process.cwd(), env: process.env },
    );
    const line = await new Promise<unknown>((resolve) => child.onLine(resolve));
    await child.exited;
    expect(line).toBe(0o022);
    expect(process.umask()).toBe(0o077); // Sluice's own mask is back
  });
});
