import { type ChildProcessByStdio, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmdirSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, SLUICE_BIN } from '../support/host.js';

/**
 * A full disk for real (issue 22): the home on a 24 MiB tmpfs mounted here, filled with a file.
 * Mounting needs root (or CAP_SYS_ADMIN); elsewhere the suite is skipped and says why.
 */
const mountPoint = mkdtempSync(join(tmpdir(), 'sluice-diskfull-'));
let skipReason: string | undefined;
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', mountPoint], { stdio: 'pipe' });
} catch (err) {
  const stderr = String((err as { stderr?: Buffer }).stderr ?? err).trim();
  skipReason = `cannot mount a tmpfs here (${stderr.split('\n')[0]})`;
  rmdirSync(mountPoint);
}

const home = join(mountPoint, 'home');
const filler = join(mountPoint, 'filler');
/** A second home no process holds open: opening its database must create the -shm file. */
const closedHome = join(mountPoint, 'closed-home');

/** Appends zeros to `filler` until the file system refuses (ENOSPC): whatever was free is taken. */
function fillDisk(): void {
  const fd = openSync(filler, 'a');
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

type Rpc = {
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: { code: string } };
};

describe.skipIf(skipReason !== undefined)(
  `a full disk is "unavailable: disk full", not a crash${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    let serve: ChildProcessByStdio<null, Readable, Readable>;
    let url: string;
    let token: string;
    /** A token never used before the disk fills: its first use makes a last-used update due. */
    let unusedToken: string;
    let stderr = '';
    const acknowledged: string[] = [];

    const rpc = async (method: string, params: Record<string, unknown>, bearer = token): Promise<Rpc> => {
      const res = await fetch(`${url}/rpc`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return (await res.json()) as Rpc;
    };
    const send = async (body: string): Promise<Rpc> => {
      const r = await rpc('message.send', { to: 'bot', body });
      if (r.result) acknowledged.push(r.result.message_id as string);
      return r;
    };
    const health = async () =>
      (await (await fetch(`${url}/healthz`)).json()) as {
        logLinesDropped: number;
        lastUseNotRecorded: number;
      };
    const attachment = join(mkdtempSync(join(tmpdir(), 'sluice-attach-')), 'noise.bin');
    const partialBlobs = () =>
      existsSync(join(home, 'blobs'))
        ? readdirSync(join(home, 'blobs'), { recursive: true }).filter((n) => String(n).endsWith('.tmp'))
        : [];
    const tempUploads = () => (existsSync(join(home, 'tmp')) ? readdirSync(join(home, 'tmp')) : []);

    beforeAll(async () => {
      writeFileSync(attachment, randomBytes(2 * 1024 * 1024));
      expect((await runCli(['init'], { home })).code).toBe(0);
      expect((await runCli(['agent', 'add', 'bot'], { home })).code).toBe(0);
      expect((await runCli(['init'], { home: closedHome })).code).toBe(0);
      expect((await runCli(['agent', 'add', 'bot'], { home: closedHome })).code).toBe(0);
      expect((await runCli(['message', 'send', 'bot', '-m', 'pending'], { home: closedHome })).code).toBe(0);
      const issued = await runCli(['token', 'owner'], { home });
      token = issued.stdout.trim().split(/\s+/).pop() as string;
      const unused = await runCli(['token', 'owner'], { home });
      unusedToken = unused.stdout.trim().split(/\s+/).pop() as string;
      serve = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
        env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      serve.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), 30_000);
        serve.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /Sluice is serving (\S+)/.exec(out);
          if (m?.[1]) {
            clearTimeout(timer);
            resolve(m[1]);
          }
        });
      });
    }, 60_000);

    afterAll(() => {
      serve?.kill('SIGKILL');
      rmSync(join(attachment, '..'), { recursive: true, force: true });
      try {
        execFileSync('umount', ['-l', mountPoint], { stdio: 'pipe' });
        rmdirSync(mountPoint);
      } catch {
        rmSync(mountPoint, { recursive: true, force: true });
      }
    });

    it('fails sends and uploads with one clear line, keeps serving reads, and recovers when space is freed', async () => {
      expect((await send('before the disk fills')).result).toBeDefined();
      fillDisk();

      // Large bodies, until one no longer fits (the WAL can reuse space it already has).
      const big = 'x'.repeat(256 * 1024);
      let refused: Rpc | undefined;
      for (let i = 0; i < 40 && !refused; i++) {
        const r = await send(`${i} ${big}`);
        if (r.error) refused = r;
      }
      expect(refused?.error).toMatchObject({ code: -32050, data: { code: 'unavailable' } });
      expect(refused?.error?.message).toMatch(/^disk full: .*SQLITE_FULL.*free some space/);
      expect((await send(`again ${big}`)).error?.message).toMatch(/^disk full/);

      // The host is up: it answers reads, and counts the request-log lines it could not write
      // (filled again: SQLite may have given back what its failed write had taken; the log's last
      // page takes a few lines more).
      fillDisk();
      const first = acknowledged[0] as string;
      let dropped = 0;
      for (let i = 0; i < 100 && dropped === 0; i++) {
        expect((await rpc('message.read', { messageId: first })).result).toBeDefined();
        dropped = (await health()).logLinesDropped;
      }
      expect(dropped).toBeGreaterThan(0);

      // A token whose last-used update is due (never used yet): recording the use cannot be
      // written, but that is bookkeeping; the reads it authenticates go on as usual.
      for (const [method, params] of [
        ['channel.list', {}],
        ['agent.status', { agent: 'bot' }],
        ['queue.summary', { agent: 'bot' }],
      ] as const) {
        expect((await rpc(method, params, unusedToken)).error).toBeUndefined();
      }
      expect((await health()).lastUseNotRecorded).toBeGreaterThan(0);

      // An upload onto the full disk: 503 unavailable, no temp file left.
      const upload = await fetch(`${url}/media`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: Buffer.alloc(512 * 1024, 7),
      });
      expect(upload.status).toBe(503);
      expect(await upload.json()).toMatchObject({
        error: { code: 'unavailable', message: expect.stringMatching(/^disk full: the upload/) },
      });
      expect(tempUploads()).toEqual([]);

      // The CLI says the same in one line, with the error table's exit code.
      const cli = await runCli(['message', 'send', 'bot', '-m', '-'], { home, input: big });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toMatch(/^sluice: unavailable: disk full: .*\n$/);
      // An attachment from the CLI: refused the same way, no partial blob left.
      const attach = await runCli(['message', 'send', 'bot', '-m', 'see file', '--attach', attachment], {
        home,
      });
      expect(attach.code).toBe(1);
      expect(attach.stderr).toMatch(/^sluice: unavailable: disk full: the attachment could not be written/);
      expect(partialBlobs()).toEqual([]);

      // Space freed: sends succeed again without a restart, and nothing acknowledged was lost.
      rmSync(filler);
      expect((await send(`after ${big}`)).result).toBeDefined();
      expect((await send('after, small')).result).toBeDefined();
      for (const id of acknowledged) {
        expect((await rpc('message.read', { messageId: id })).error).toBeUndefined();
      }
      expect(serve.exitCode).toBeNull();
      expect(stderr).toBe('');
    }, 120_000);

    it('delivers an attachment it cannot copy without a path but with the reason, and leaves no temp file', async () => {
      // Sent while there is space; the hook's copy of it is made on the full disk.
      expect((await runCli(['agent', 'add', 'reader'], { home })).code).toBe(0);
      const sent = await runCli(['message', 'send', 'reader', '-m', 'see file', '--attach', attachment], {
        home,
      });
      expect(sent.code).toBe(0);
      fillDisk();
      let hook: Awaited<ReturnType<typeof runCli>>;
      try {
        hook = await runCli(['hook', 'claude', 'user-prompt-submit', '--as', 'reader'], {
          home,
          input: JSON.stringify({ session_id: 's1', hook_event_name: 'UserPromptSubmit', cwd: tmpdir() }),
        });
        expect(readdirSync(home, { recursive: true }).filter((n) => String(n).endsWith('.tmp'))).toEqual([]);
      } finally {
        rmSync(filler);
      }
      expect(hook.code).toBe(0);
      expect(hook.stdout).toContain('see file');
      expect(hook.stdout).toMatch(
        /path_error\W+disk full: the attachment copy could not be written \(ENOSPC\)/,
      );
      expect(hook.stderr).toMatch(
        /^sluice: attachment a_\w+ \(noise\.bin\) has no local copy: disk full: the attachment copy could not be written \(ENOSPC\); free some space and try again\n$/,
      );
    }, 60_000);

    it('says "disk full" when a command opens a database no process holds open', async () => {
      fillDisk();
      try {
        const read = await runCli(['message', 'ls', '--as', 'bot'], { home: closedHome });
        expect(read.stderr).toMatch(/^sluice: unavailable: disk full: .*free some space and try again\n$/);
        expect(read.code).toBe(1);
      } finally {
        rmSync(filler);
      }
      // Space freed: the same read works and finds the pending message.
      const again = await runCli(['message', 'ls', '--as', 'bot'], { home: closedHome });
      expect([again.code, again.stderr]).toEqual([0, '']);
      expect(again.stdout).toContain('pending');
    }, 60_000);
  },
);
