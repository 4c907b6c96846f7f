import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from './backend.js';

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe.each(backendsUnderTest())('blob store files and streams (%s)', (backend) => {
  let h: ConformanceHost;
  let n = 0;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'blob_files');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
  });
  afterEach(async () => {
    await h.close();
  });

  /** A finished temp file in the home, as an upload leaves it. */
  const tempFile = (bytes: Uint8Array) => {
    mkdirSync(join(h.home, 'tmp'), { recursive: true });
    const path = join(h.home, 'tmp', `t${n++}.part`);
    writeFileSync(path, bytes);
    return path;
  };

  it('takes a finished file under its digest, owning it (moved or removed), also when already stored', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const first = tempFile(bytes);
    await h.ctx.store.blobs.putFile(sha(bytes), first);
    expect(existsSync(first)).toBe(false);
    const again = tempFile(bytes);
    await h.ctx.store.blobs.putFile(sha(bytes), again);
    expect(existsSync(again)).toBe(false);
    expect(await h.ctx.store.blobs.list()).toHaveLength(1);
    expect(Buffer.compare(Buffer.from((await h.ctx.store.blobs.get(sha(bytes))) as Uint8Array), bytes)).toBe(
      0,
    );
  });

  it('removes the file when the digest is refused', async () => {
    const path = tempFile(Buffer.from('x'));
    await expect(h.ctx.store.blobs.putFile('../../etc/passwd', path)).rejects.toThrow(/sha256/);
    expect(existsSync(path)).toBe(false);
  });

  it('streams a whole blob or an inclusive range, and null for a blob it does not have', async () => {
    const bytes = Buffer.from('0123456789'.repeat(250_000));
    await h.ctx.store.blobs.putFile(sha(bytes), tempFile(bytes));
    const whole = await h.ctx.store.blobs.openRead(sha(bytes));
    expect(await text(whole as NodeJS.ReadableStream)).toBe(bytes.toString());
    const part = await h.ctx.store.blobs.openRead(sha(bytes), { start: 1_048_570, end: 1_048_589 });
    expect(await text(part as NodeJS.ReadableStream)).toBe(bytes.subarray(1_048_570, 1_048_590).toString());
    expect(await h.ctx.store.blobs.openRead('0'.repeat(64))).toBeNull();
  });
});
