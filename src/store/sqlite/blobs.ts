import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from '../store.js';

const SHA256_HEX = /^[0-9a-f]{64}$/;

function assertSha(sha256: string): void {
  // Blob names become paths: only a well-formed digest may reach the file system.
  if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256 digest: ${sha256.slice(0, 80)}`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Blobs as files `<dir>/<sha[0:2]>/<sha>`, written to a temp name and renamed (atomic). */
export function createFileBlobStore(dir: string): BlobStore {
  const pathOf = (sha: string) => join(dir, sha.slice(0, 2), sha);
  return {
    async put(sha256, bytes) {
      assertSha(sha256);
      const target = pathOf(sha256);
      await mkdir(join(dir, sha256.slice(0, 2)), { recursive: true, mode: 0o700 });
      try {
        await stat(target);
        return;
      } catch {
        // absent: write it
      }
      const temp = `${target}.${process.pid}.${Date.now()}.tmp`;
      try {
        await writeFile(temp, bytes, { flush: true, mode: 0o600 });
        await rename(temp, target);
      } catch (err) {
        // A full disk leaves a partial file: never keep it.
        await rm(temp, { force: true });
        throw err;
      }
    },
    async putFile(sha256, path) {
      try {
        assertSha(sha256);
        const target = pathOf(sha256);
        await mkdir(join(dir, sha256.slice(0, 2)), { recursive: true, mode: 0o700 });
        if (await exists(target)) return;
        // Durable before it is visible under its name: a metadata row may point at it next.
        const handle = await open(path, 'r');
        try {
          await handle.sync();
        } finally {
          await handle.close();
        }
        try {
          await rename(path, target);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
          // The temp folder is on another file system: copy to a temp name beside the target.
          const temp = `${target}.${process.pid}.${Date.now()}.tmp`;
          try {
            await copyFile(path, temp);
            await rename(temp, target);
          } catch (copyErr) {
            await rm(temp, { force: true });
            throw copyErr;
          }
        }
      } finally {
        await rm(path, { force: true });
      }
    },
    async openRead(sha256, range) {
      assertSha(sha256);
      let handle: Awaited<ReturnType<typeof open>>;
      try {
        handle = await open(pathOf(sha256), 'r');
      } catch {
        return null;
      }
      // The stream owns the handle and closes it at the end, on error and on destroy.
      return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
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
