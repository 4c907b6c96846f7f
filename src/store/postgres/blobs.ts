import { readFile, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { Generated, Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../schema.js';
import type { BlobStore } from '../store.js';

const SHA256_HEX = /^[0-9a-f]{64}$/;

function assertSha(sha256: string): void {
  if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256 digest: ${sha256.slice(0, 80)}`);
}

/** Bytes fetched per query when streaming a blob out: what one download holds at a time. */
export const READ_SLICE_BYTES = 1024 * 1024;

/** The `blobs` table (bytea), which src/store/schema.ts does not list: only this module reads it. */
type BlobTables = {
  blobs: { sha256: string; bytes: Uint8Array; size: number; created_at: Generated<Date> };
};

/**
 * Attachment bytes in the database, content-addressed by SHA-256: every host that shares the
 * database serves every attachment, and a blob commits or not together with nothing else to sync.
 */
export function createDatabaseBlobStore(db: Kysely<Database>): BlobStore {
  const blobs = db.withTables<BlobTables>();
  const put = async (sha256: string, bytes: Uint8Array) => {
    assertSha(sha256);
    await blobs
      .insertInto('blobs')
      .values({
        sha256,
        bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        size: bytes.byteLength,
      })
      .onConflict((oc) => oc.column('sha256').doNothing())
      .execute();
  };
  return {
    async putFile(sha256, path) {
      try {
        assertSha(sha256);
        if (await this.has(sha256)) return;
        // One statement with the whole file as a binary parameter: the bytes are in memory once
        // (plus the driver's message) only for this insert, bounded by the upload limit and the
        // per-principal upload cap; appending slices to a bytea would rewrite it each time.
        await put(sha256, await readFile(path));
      } finally {
        await rm(path, { force: true });
      }
    },
    async openRead(sha256, range) {
      assertSha(sha256);
      const row = await blobs
        .selectFrom('blobs')
        .select(sql<number>`octet_length(bytes)`.as('length'))
        .where('sha256', '=', sha256)
        .executeTakeFirst();
      if (!row) return null;
      const length = Number(row.length);
      const start = range?.start ?? 0;
      const end = Math.min(range?.end ?? length - 1, length - 1);
      async function* slices() {
        // substring() fetches only the TOAST chunks it needs for uncompressed values; attachments
        // are mostly compressed formats, which PostgreSQL stores uncompressed.
        for (let offset = start; offset <= end; offset += READ_SLICE_BYTES) {
          const count = Math.min(READ_SLICE_BYTES, end - offset + 1);
          const slice = await blobs
            .selectFrom('blobs')
            .select(sql<Buffer>`substring(bytes from ${offset + 1} for ${count})`.as('part'))
            .where('sha256', '=', sha256)
            .executeTakeFirst();
          if (!slice || slice.part.length !== count) throw new Error(`blob ${sha256} changed while read`);
          yield slice.part;
        }
      }
      return Readable.from(slices(), { objectMode: false, highWaterMark: 1 });
    },
    put,
    async get(sha256) {
      assertSha(sha256);
      const row = await blobs
        .selectFrom('blobs')
        .select('bytes')
        .where('sha256', '=', sha256)
        .executeTakeFirst();
      return row ? new Uint8Array(row.bytes) : null;
    },
    async has(sha256) {
      assertSha(sha256);
      const row = await blobs
        .selectFrom('blobs')
        .select('sha256')
        .where('sha256', '=', sha256)
        .executeTakeFirst();
      return row !== undefined;
    },
    async delete(sha256) {
      assertSha(sha256);
      const result = await blobs.deleteFrom('blobs').where('sha256', '=', sha256).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
    async list() {
      const rows = await blobs
        .selectFrom('blobs')
        .select(['sha256', 'size', sql<number>`extract(epoch from created_at) * 1000`.as('mtime_ms')])
        .orderBy('sha256')
        .execute();
      return rows.map((r) => ({ sha256: r.sha256, size: Number(r.size), mtimeMs: Number(r.mtime_ms) }));
    },
  };
}
