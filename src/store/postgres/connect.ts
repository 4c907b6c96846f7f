import type { Store } from '../store.js';

export interface PostgresStoreOptions {
  url: string;
}

/** PostgreSQL backend (issue 7): not built yet, refused with a clear line rather than a crash. */
export async function openPostgresStore(_options: PostgresStoreOptions): Promise<Store> {
  const { SluiceError } = await import('../../core/errors.js');
  throw new SluiceError('unavailable', 'the PostgreSQL backend is not available in this build yet; use the SQLite default');
}
