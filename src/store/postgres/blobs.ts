import type { Generated, Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../schema.js';
import type { BlobStore } from '../store.js';

const SHA256_HEX = /^[0-9a-f]{64}$/;

function assertSha(sha256: string): void {
  if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256 digest: ${sha256.slice(0, 80)}`);
}

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
  return {
    async put(sha256, bytes) {
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
    },
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
