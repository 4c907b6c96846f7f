import { type ChildProcess, spawn } from 'node:child_process';
import {
  existsSync,
  type FSWatcher,
  mkdirSync,
  readdirSync,
  utimesSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { issueToken } from '../../src/host/identity/principals.js';
import { uploadTempDir } from '../../src/host/media/media.js';
import { type HostServer, startHostServer, uploadTempMaxAgeMs } from '../../src/surfaces/http/server.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { headersOnly, openRaw } from './support/raw-socket.js';

/** Waits for a condition the server reaches asynchronously, failing after `ms`. */
async function until(probe: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Every name that appears in the temp folder, even for a moment (inotify). `flush` writes a
 * sentinel and waits for its event: events arrive in order, so all earlier ones are in by then.
 */
function watchTemp(dir: string): { seen: Set<string>; flush(): Promise<void>; close(): void } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const seen = new Set<string>();
  const waiters = new Map<string, () => void>();
  const watcher: FSWatcher = watch(dir, (_event, name) => {
    if (!name) return;
    const wake = waiters.get(name);
    if (wake) wake();
    else seen.add(name);
  });
  let n = 0;
  return {
    seen,
    async flush() {
      const name = `sentinel-${n++}`;
      const arrived = new Promise<void>((resolve) => waiters.set(name, resolve));
      await writeFile(join(dir, name), '');
      await rm(join(dir, name));
      await arrived;
      waiters.delete(name);
    },
    close: () => watcher.close(),
  };
}

describe('uploads dropped at any byte leave no temp file (issue 29)', () => {
  let h: TestHost;
  let server: HostServer;
  let token: string;
  const dir = () => uploadTempDir(h.ctx);
  const files = () => (existsSync(dir()) ? readdirSync(dir()) : []);

  beforeAll(async () => {
    h = await openTestHost();
    token = await issueToken(h.ctx, 'owner');
    server = await startHostServer({ ctx: h.ctx, port: 0, webRoot: '/nonexistent-web-root', mcp: false });
  });
  afterAll(async () => {
    await server.close();
    await h.close();
  });
  afterEach(() => expect(files()).toEqual([]));

  /** Sends the headers and `sent` bytes of a `declared`-byte upload, then drops or half-closes. */
  async function cutUpload(target: HostServer, declared: number, sent: number, how: 'destroy' | 'end') {
    const before = target.uploads.settled;
    const raw = await openRaw(target.url);
    raw.write(
      headersOnly(target.url, 'POST', '/media', {
        authorization: `Bearer ${token}`,
        'content-length': declared,
      }),
    );
    if (sent > 0) raw.write(Buffer.alloc(sent, 0x41));
    if (how === 'destroy') raw.destroy();
    else raw.socket.end();
    await raw.closed;
    // Settled: the handler ran (it may start after the client is gone) and cleaned up.
    await until(() => target.uploads.settled > before && target.uploads.count === 0, 'the upload to settle');
  }

  it('a connection dropped at 0 bytes never creates a temp file', async () => {
    const temp = watchTemp(dir());
    try {
      for (let i = 0; i < 20; i++) await cutUpload(server, 58_678, 0, i % 2 === 0 ? 'destroy' : 'end');
      await temp.flush();
      expect([...temp.seen]).toEqual([]);
    } finally {
      temp.close();
    }
  });

  it('a connection dropped mid-body, or closed after the last byte, removes its temp file', async () => {
    await cutUpload(server, 300_000, 150_000, 'destroy');
    await cutUpload(server, 300_000, 299_999, 'end');
    // The whole body, then gone before the answer: stored or not (the host may see the close
    // before it read the last chunk), never a temp file left.
    await cutUpload(server, 5_000, 5_000, 'destroy');
    await cutUpload(server, 5_000, 5_000, 'end');
  });

  it('closing the host mid-upload waits for the upload to remove its temp file', async () => {
    const other = await startHostServer({
      ctx: h.ctx,
      port: 0,
      webRoot: '/nonexistent-web-root',
      mcp: false,
    });
    const raw = await openRaw(other.url);
    raw.write(
      headersOnly(other.url, 'POST', '/media', {
        authorization: `Bearer ${token}`,
        'content-length': 1_000_000,
      }),
    );
    raw.write(Buffer.alloc(200_000, 1));
    await until(() => files().length > 0 && other.uploads.count === 1, 'the upload to start');
    await other.close();
    expect(other.uploads.count).toBe(0);
    expect(files()).toEqual([]);
    raw.destroy();
  });

  it('under CPU load (busy child processes), cuts at random bytes leave nothing', async () => {
    const busy: ChildProcess[] = [];
    for (let i = 0; i < 3; i++) {
      // Bounded: each spins for at most 60 s and is killed when the test ends.
      busy.push(spawn(process.execPath, ['-e', 'const end = Date.now() + 60000; while (Date.now() < end);']));
    }
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 120_000 }),
          fc.double({ min: 0, max: 1, noNaN: true }),
          fc.constantFrom('destroy' as const, 'end' as const),
          async (declared, fraction, how) => {
            const sent = fraction < 0.3 ? 0 : Math.floor(declared * fraction);
            await cutUpload(server, declared, Math.min(sent, declared), how);
            expect(files()).toEqual([]);
          },
        ),
        { numRuns: 40 },
      );
    } finally {
      for (const child of busy) child.kill('SIGKILL');
    }
  }, 120_000);

  it('a starting host sweeps temp uploads older than the bound and keeps younger ones', async () => {
    mkdirSync(dir(), { recursive: true, mode: 0o700 });
    const old = join(dir(), 'upload-000000000000000000000000.part');
    const young = join(dir(), 'upload-111111111111111111111111.part');
    const other = join(dir(), 'not-an-upload.txt');
    for (const path of [old, young, other]) writeFileSync(path, 'x');
    const bound = uploadTempMaxAgeMs({ requestTimeoutMs: 120_000 });
    expect(bound).toBe(60 * 60 * 1000);
    const past = (Date.now() - bound - 60_000) / 1000;
    utimesSync(old, past, past);
    utimesSync(other, past, past);
    const next = await startHostServer({ ctx: h.ctx, port: 0, webRoot: '/nonexistent-web-root', mcp: false });
    await next.close();
    expect(files().sort()).toEqual(['not-an-upload.txt', 'upload-111111111111111111111111.part']);
    await rm(young);
    await rm(other);
  });
});
