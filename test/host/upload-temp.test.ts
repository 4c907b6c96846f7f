import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { putMediaStream, uploadTempDir } from '../../src/host/media/media.js';
import { openTestHost, type TestHost } from '../support/host.js';

const tempFiles = (h: TestHost) => {
  const dir = uploadTempDir(h.ctx);
  return existsSync(dir) ? readdirSync(dir) : [];
};

/**
 * A request body that fails when first read, the way a connection dropped before its first byte
 * does; it records the temp folder at that moment (what a process killed right then would leave).
 */
function droppedAtZero(h: TestHost, seen: string[][]): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      return {
        async next(): Promise<IteratorResult<Uint8Array>> {
          seen.push(tempFiles(h));
          throw Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
        },
      };
    },
  };
}

describe('upload temp files (issue 29)', () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
  });
  afterAll(async () => {
    await h.close();
  });

  it('an upload dropped before its first byte never creates a temp file', async () => {
    const seen: string[][] = [];
    await expect(putMediaStream(h.ctx, h.owner, droppedAtZero(h, seen), 'x.bin')).rejects.toThrow('aborted');
    expect(seen).toEqual([[]]);
    expect(tempFiles(h)).toEqual([]);
  });

  it('an empty upload is refused without a temp file', async () => {
    const empty: AsyncIterable<Uint8Array> = { async *[Symbol.asyncIterator]() {} };
    const err = await putMediaStream(h.ctx, h.owner, empty, 'x.bin').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe('invalid_params');
    expect(tempFiles(h)).toEqual([]);
  });

  it('a body that fails after its first byte removes the temp file it wrote', async () => {
    const seen: string[][] = [];
    async function* body() {
      yield new Uint8Array([1, 2, 3]);
      seen.push(tempFiles(h));
      throw Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
    }
    await expect(putMediaStream(h.ctx, h.owner, body(), 'x.bin')).rejects.toThrow('aborted');
    expect(seen[0]).toHaveLength(1);
    expect(seen[0]?.[0]).toMatch(/^upload-[0-9a-f]{24}\.part$/);
    expect(tempFiles(h)).toEqual([]);
  });
});
