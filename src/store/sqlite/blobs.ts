import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from '../store.js';

const SHA256_HEX = /^[0-9a-f]{64}$/;

function assertSha(sha256: string): void {
  // Blob names become paths: only a well-formed digest may reach the file system.
  if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256 digest: ${sha256.slice(0, 80)}`);
}

/** Blobs as files `<dir>/<sha[0:2]>/<sha>`, written to a temp name and renamed (atomic). */
export function createFileBlobStore(dir: string): BlobStore {
  const pathOf = (sha: string) => join(dir, sha.slice(0, 2), sha);
  return {
    async put(sha256, bytes) {
      assertSha(sha256);
      const target = pathOf(sha256);
      await mkdir(join(dir, sha256.slice(0, 2)), { recursive: true });
      try {
        await stat(target);
        return;
      } catch {
        // absent: write it
      }
      const temp = `${target}.${process.pid}.${Date.now()}.tmp`;
      await writeFile(temp, bytes, { flush: true });
      await rename(temp, target);
    },
    async get(sha256) {
      assertSha(sha256);
      try {
        return new Uint8Array(await readFile(pathOf(sha256)));
      } catch {
        return null;
      }
    },
    async has(sha256) {
      assertSha(sha256);
      try {
        await stat(pathOf(sha256));
        return true;
      } catch {
        return false;
      }
    },
    async delete(sha256) {
      assertSha(sha256);
      try {
        await rm(pathOf(sha256));
        return true;
      } catch {
        return false;
      }
    },
    async list() {
      const out: { sha256: string; size: number; mtimeMs: number }[] = [];
      let prefixes: string[];
      try {
        prefixes = await readdir(dir);
      } catch {
        return out;
      }
      for (const prefix of prefixes) {
        let names: string[];
        try {
          names = await readdir(join(dir, prefix));
        } catch {
          continue;
        }
        for (const name of names) {
          if (!SHA256_HEX.test(name)) continue;
          const info = await stat(join(dir, prefix, name));
          out.push({ sha256: name, size: info.size, mtimeMs: info.mtimeMs });
        }
      }
      return out;
    },
  };
}
