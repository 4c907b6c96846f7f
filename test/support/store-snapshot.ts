import { sql } from 'kysely';
import type { HostContext } from '../../src/host/identity/context.js';

/**
 * Every row of every table of the store (and the SQLite sequence counters), as sorted JSON text
 * per table: two snapshots are equal exactly when nothing in the store changed.
 */
export async function snapshotStore(ctx: HostContext): Promise<Record<string, string[]>> {
  const db = ctx.store.db;
  const tables =
    ctx.store.dialect === 'sqlite'
      ? (
          await sql<{ name: string }>`select name from sqlite_master where type = 'table'
            and name not like 'messages_fts%' and name not like 'kysely_%'`.execute(db)
        ).rows.map((r) => r.name)
      : (
          await sql<{ name: string }>`select table_name as name from information_schema.tables
            where table_schema = current_schema() and table_type = 'BASE TABLE'
            and table_name not like 'kysely_%'`.execute(db)
        ).rows.map((r) => r.name);
  const out: Record<string, string[]> = {};
  for (const table of tables.sort()) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db)).rows;
    out[table] = rows
      .map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? String(v) : v)))
      .sort();
  }
  if (ctx.store.dialect === 'postgres') {
    const seqs = await sql<{ name: string; value: string | null }>`
      select sequencename as name, last_value::text as value from pg_sequences
      where schemaname = current_schema()`.execute(db);
    out['(sequences)'] = seqs.rows.map((r) => `${r.name}=${r.value}`).sort();
  }
  return out;
}
