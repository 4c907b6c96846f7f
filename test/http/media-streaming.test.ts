import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueToken } from '../../src/host/identity/principals.js';
import { putMedia, uploadTempDir } from '../../src/host/media/media.js';
import { type HostServer, startHostServer } from '../../src/surfaces/http/server.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { headersOnly, openRaw } from './support/raw-socket.js';

/** Polls a condition the server reaches asynchronously (a file appears, a slot frees). */
async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const tempFiles = (h: ConformanceHost) => {
  const dir = uploadTempDir(h.ctx);
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe.each(backendsUnderTest())('media streaming over HTTP (%s)', (backend) => {
  let h: ConformanceHost;
  let server: HostServer;
  let owner: string;
  let other: string;
  // Larger than one PostgreSQL read slice (1 MiB), so ranges cross slice boundaries.
  const blob = randomBytes(2.5 * 1024 * 1024);
  const sha = createHash('sha256').update(blob).digest('hex');
  let id: string;

  const auth = (token = owner) => ({ authorization: `Bearer ${token}` });
  const get = (headers: Record<string, string> = {}, token = owner) =>
    fetch(`${server.url}/media/${id}`, { headers: { ...auth(token), ...headers } });

  beforeAll(async () => {
    h = await openConformanceHost(backend, 'media_stream');
    await h.person('other');
    owner = await issueToken(h.ctx, 'owner');
    other = await issueToken(h.ctx, 'other');
    server = await startHostServer({
      ctx: h.ctx,
      port: 0,
      webRoot: '/nonexistent-web-root',
      mcp: false,
      httpLimits: { maxUploadsPerPrincipal: 1, maxDownloadsPerPrincipal: 1 },
    });
    const res = await fetch(`${server.url}/media`, {
      method: 'POST',
      headers: { ...auth(), 'x-filename': 'noise.bin' },
      body: blob,
    });
    expect(res.status).toBe(201);
    id = ((await res.json()) as { attachment_id: string }).attachment_id;
  });
  afterAll(async () => {
    await server.close();
    await h.close();
  });

  it('stores a streamed upload under its SHA-256 and leaves no temp file', async () => {
    expect(await h.ctx.store.blobs.has(sha)).toBe(true);
    expect(tempFiles(h)).toEqual([]);
    expect(statSync(uploadTempDir(h.ctx)).mode & 0o777).toBe(0o700);
  });

  it('serves the whole attachment with its digest as ETag, and 304 for that ETag', async () => {
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(`"${sha}"`);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('content-length')).toBe(String(blob.length));
    expect(Buffer.compare(Buffer.from(await res.arrayBuffer()), blob)).toBe(0);
    const cached = await get({ 'if-none-match': `"${sha}"` });
    expect(cached.status).toBe(304);
  });

  it.each([
    ['bytes=1048570-1048580', 1048570, 1048580],
    ['bytes=2000000-', 2000000, blob.length - 1],
    ['bytes=-100', blob.length - 100, blob.length - 1],
    ['bytes=0-0', 0, 0],
  ])('answers Range %s with 206 and exactly those bytes', async (range, start, end) => {
    const res = await get({ range });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${blob.length}`);
    const body = Buffer.from(await res.arrayBuffer());
    expect(Buffer.compare(body, blob.subarray(start, end + 1))).toBe(0);
  });

  it('answers a range past the end with 416 and the size', async () => {
    const res = await get({ range: `bytes=${blob.length}-` });
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe(`bytes */${blob.length}`);
  });

  it('sends everything when If-Range names another version', async () => {
    const res = await get({ range: 'bytes=0-9', 'if-range': '"stale"' });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });

  it('writes an upload in progress to a 0600 temp file and removes it when the client aborts', async () => {
    const before = (await h.ctx.store.blobs.list()).length;
    const raw = await openRaw(server.url);
    raw.write(headersOnly(server.url, 'POST', '/media', { ...auth(), 'content-length': 1_000_000 }));
    raw.write(Buffer.alloc(300_000, 7));
    const [name] = await until(() => (tempFiles(h).length > 0 ? tempFiles(h) : undefined), 'the temp file');
    expect(statSync(`${uploadTempDir(h.ctx)}/${name}`).mode & 0o777).toBe(0o600);

    // One upload per principal at a time: a second one is refused at once, another principal's is not.
    const second = await fetch(`${server.url}/media`, { method: 'POST', headers: auth(), body: 'x' });
    expect(second.status).toBe(429);
    expect(await second.json()).toMatchObject({ error: { code: 'busy' } });
    const others = await fetch(`${server.url}/media`, { method: 'POST', headers: auth(other), body: 'hi' });
    expect(others.status).toBe(201);

    raw.destroy();
    await until(() => tempFiles(h).length === 0, 'the temp file to go');
    expect((await h.ctx.store.blobs.list()).length).toBe(before + 1);
    // The slot is free again.
    const third = await fetch(`${server.url}/media`, { method: 'POST', headers: auth(), body: 'again' });
    expect(third.status).toBe(201);
  });

  it('refuses a streamed upload over the limit with 413 and keeps nothing of it', async () => {
    const capped = await startHostServer({
      ctx: { ...h.ctx, limits: { ...h.ctx.limits, maxUploadBytes: 100_000 } },
      port: 0,
      webRoot: '/nonexistent-web-root',
      mcp: false,
    });
    try {
      const before = (await h.ctx.store.blobs.list()).length;
      const res = await fetch(`${capped.url}/media`, {
        method: 'POST',
        headers: auth(),
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(10_000).fill(i));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(tempFiles(h)).toEqual([]);
      expect((await h.ctx.store.blobs.list()).length).toBe(before);
    } finally {
      await capped.close();
    }
  });

  it('answers HEAD with the headers only and holds no download slot afterwards', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/media/${id}`, { method: 'HEAD', headers: auth() });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-length')).toBe(String(blob.length));
      expect(res.headers.get('etag')).toBe(`"${sha}"`);
    }
    const after = await get({ range: 'bytes=0-0' });
    expect(after.status).toBe(206);
    await after.arrayBuffer();
  });

  it('closes a download nobody reads once the socket idle timeout passes, freeing its slot', async () => {
    const idle = await startHostServer({
      ctx: h.ctx,
      port: 0,
      webRoot: '/nonexistent-web-root',
      mcp: false,
      httpLimits: { socketIdleTimeoutMs: 300, maxDownloadsPerPrincipal: 1 },
    });
    try {
      // Stored directly: a pooled keep-alive connection would outlive this short idle timeout.
      const { attachment_id: bigId } = await putMedia(
        h.ctx,
        h.owner,
        Buffer.alloc(24 * 1024 * 1024, 5),
        'idle.bin',
      );
      const raw = await openRaw(idle.url);
      raw.write(headersOnly(idle.url, 'GET', `/media/${bigId}`, auth()));
      await raw.waitFor('HTTP/1.1 200');
      raw.socket.pause();
      // The host drops the stalled socket (the paused client cannot see that) and frees the slot.
      const next = await until(async () => {
        // A pooled connection may itself have just been closed as idle: that probe just retries.
        const r = await fetch(`${idle.url}/media/${bigId}`, {
          headers: { ...auth(), range: 'bytes=0-0' },
        }).catch(() => undefined);
        await r?.arrayBuffer();
        return r?.status === 206 ? r : undefined;
      }, 'the stalled download to be dropped');
      expect(next.status).toBe(206);
      raw.destroy();
    } finally {
      await idle.close();
    }
  });

  it('caps downloads in progress per principal (429) and frees the slot when the reader goes', async () => {
    // Bigger than the loopback socket buffers, so an unread download stays in progress.
    const big = await fetch(`${server.url}/media`, {
      method: 'POST',
      headers: { ...auth(), 'x-filename': 'big.bin' },
      body: Buffer.alloc(24 * 1024 * 1024, 3),
    });
    const bigId = ((await big.json()) as { attachment_id: string }).attachment_id;
    const raw = await openRaw(server.url);
    raw.write(headersOnly(server.url, 'GET', `/media/${bigId}`, auth()));
    await raw.waitFor('HTTP/1.1 200');
    // The reader stops reading: the download stays in progress.
    raw.socket.pause();
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    raw.destroy();
    const res = await until(async () => {
      const r = await get({ range: 'bytes=0-9' });
      await r.arrayBuffer();
      return r.status === 206 ? r : undefined;
    }, 'the slot to free');
    expect(res.status).toBe(206);
  });
});
