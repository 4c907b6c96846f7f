import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import fc from 'fast-check';
import { uploadTempDir } from '../src/host/media/media.js';
import type { FuzzFailure, FuzzReport } from './fuzz-cli.js';
import { openFuzzHost } from './fuzz-rpc.js';

/** The blob every download reads: several PostgreSQL-sized slices would be 1 MiB each. */
const BLOB_BYTES = 300_000;

const ranges = fc.oneof(
  fc
    .tuple(fc.nat({ max: BLOB_BYTES + 10 }), fc.nat({ max: BLOB_BYTES + 10 }))
    .map(([a, b]) => `bytes=${a}-${b}`),
  fc.nat({ max: BLOB_BYTES + 10 }).map((a) => `bytes=${a}-`),
  fc.nat({ max: BLOB_BYTES + 10 }).map((n) => `bytes=-${n}`),
  fc.constantFrom(
    'bytes=',
    'bytes=-',
    'bytes=0-1,3-4',
    'bytes=1-0',
    'items=0-1',
    'bytes=99999999999999999999999-',
    'bytes=-99999999999999999999999',
    'bytes= 5 - 9 ',
    'BYTES=0-0',
    'bytes=0x10-0x20',
    'bytes=1e3-2e3',
    '',
  ),
  fc.string({ maxLength: 30 }).map((s) => `bytes=${s}`),
);

/** Where an upload is cut off: bytes sent of the declared length, and how the client leaves. */
const aborts = fc.record({
  declared: fc.integer({ min: 1, max: 200_000 }),
  sentFraction: fc.double({ min: 0, max: 0.99, noNaN: true }),
  how: fc.constantFrom('destroy' as const, 'end' as const),
});

/** Temp uploads in the host's home now. */
function tempFiles(ctx: Parameters<typeof uploadTempDir>[0]): string[] {
  const dir = uploadTempDir(ctx);
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Sends part of an upload on a raw socket, then drops or half-closes the connection. */
function abortedUpload(url: string, token: string, declared: number, sent: number, how: 'destroy' | 'end') {
  const { hostname, port, host } = new URL(url);
  return new Promise<void>((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(
        `POST /media HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${token}\r\ncontent-length: ${declared}\r\n\r\n`,
      );
      socket.write(Buffer.alloc(sent, 0x41), () => {
        if (how === 'destroy') socket.destroy();
        else socket.end();
      });
    });
    // Read (and drop) whatever the host answers, so its closing the connection is seen.
    socket.resume();
    socket.on('error', () => {});
    socket.on('close', () => resolve());
  });
}

/**
 * Ranged downloads and cut-off uploads against a real server: every `Range` header gets 200, 206
 * or 416, a 206 carries exactly the bytes its Content-Range names, nothing answers 500; an upload
 * cut off anywhere leaves no temp file and no blob.
 */
export async function fuzzTransfer(runs: number, seed: number): Promise<FuzzReport> {
  const host = await openFuzzHost();
  const token = await host.token('alice');
  const blob = Buffer.from(Array.from({ length: BLOB_BYTES }, (_, i) => (i * 7919) % 251));
  const failures: FuzzFailure[] = [];
  let inputs = 0;
  try {
    const up = await fetch(`${host.server.url}/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: blob,
    });
    const { attachment_id: id } = (await up.json()) as { attachment_id: string };
    const etag = `"${createHash('sha256').update(blob).digest('hex')}"`;
    const blobsBefore = (await host.ctx.store.blobs.list()).length;

    await fc.assert(
      fc.asyncProperty(ranges, async (range) => {
        inputs++;
        const res = await fetch(`${host.server.url}/media/${id}`, {
          headers: { authorization: `Bearer ${token}`, range },
        });
        const body = Buffer.from(await res.arrayBuffer());
        const fail = (problem: string) => failures.push({ input: `Range: ${range}`, problem });
        if (res.headers.get('etag') !== etag) fail(`etag ${res.headers.get('etag')}`);
        if (res.status === 200) {
          if (Buffer.compare(body, blob) !== 0) fail('200 without the whole blob');
        } else if (res.status === 206) {
          const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers.get('content-range') ?? '');
          if (!m) return void fail(`206 with Content-Range ${res.headers.get('content-range')}`);
          const [start, end, size] = [Number(m[1]), Number(m[2]), Number(m[3])];
          if (size !== blob.length || start > end || end >= size) fail(`bad Content-Range ${m[0]}`);
          if (Buffer.compare(body, blob.subarray(start, end + 1)) !== 0) fail('206 body is not that range');
        } else if (res.status === 416) {
          if (res.headers.get('content-range') !== `bytes */${blob.length}`) fail('416 without the size');
        } else {
          fail(`status ${res.status}`);
        }
      }),
      { numRuns: Math.ceil(runs * 0.8), seed, endOnFailure: true },
    );

    await fc.assert(
      fc.asyncProperty(aborts, async ({ declared, sentFraction, how }) => {
        inputs++;
        const sent = Math.floor(declared * sentFraction);
        const settledBefore = host.server.uploads.settled;
        await abortedUpload(host.server.url, token, declared, sent, how);
        // The host notices the closed socket asynchronously (and shares this process, on a busy
        // machine): wait until it has finished with this upload (the handler may even start after
        // the client is gone), then look; a file seen before that may still be on its way out.
        const settled = () => host.server.uploads.settled > settledBefore && host.server.uploads.count === 0;
        const deadline = Date.now() + 20_000;
        while (!settled() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        const left = tempFiles(host.ctx);
        const blobs = (await host.ctx.store.blobs.list()).length;
        const input = `upload cut at ${sent}/${declared} bytes (${how})`;
        if (!settled()) failures.push({ input, problem: 'the host did not finish with the upload in 20 s' });
        if (left.length > 0) failures.push({ input, problem: `temp files left: ${left.join(', ')}` });
        if (blobs !== blobsBefore) failures.push({ input, problem: `${blobs - blobsBefore} blob(s) stored` });
      }),
      { numRuns: Math.max(1, Math.floor(runs * 0.2)), seed, endOnFailure: true },
    );
  } catch (err) {
    if (failures.length === 0) failures.push({ input: '(property)', problem: String(err).slice(0, 500) });
  } finally {
    await host.close();
  }
  return { surface: 'media transfers', inputs, failures };
}
