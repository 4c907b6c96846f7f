import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteStore } from './sqlite/connect.js';
import type { Durability, Store } from './store.js';

export interface OpenStoreOptions {
  /** The Sluice home folder (blobs, default database file). */
  home: string;
  /** `postgres://…` for PostgreSQL; a file path or empty for the SQLite file in the home. */
  url?: string | undefined;
  durability?: Durability;
  /** Poll interval for cross-process change detection on SQLite. */
  pollMs?: number;
}

/** True when `url` names a PostgreSQL database. */
export function isPostgresUrl(url: string | undefined): boolean {
  return url !== undefined && /^postgres(ql)?:\/\//.test(url);
}

/** Opens the store the options name, running migrations first. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  mkdirSync(options.home, { recursive: true, mode: 0o700 });
  if (isPostgresUrl(options.url)) {
    const { openPostgresStore } = await import('./postgres/connect.js');
    return openPostgresStore({ url: options.url as string });
  }
  const path = options.url && options.url !== '' ? options.url : join(options.home, 'sluice.db');
  return openSqliteStore({
    path,
    blobDir: join(options.home, 'blobs'),
    durability: options.durability ?? 'full',
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
  });
}
