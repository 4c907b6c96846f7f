import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { HostContext } from '../src/host/identity/context.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, resolvePrincipal } from '../src/host/identity/principals.js';
import { sendMessage } from '../src/host/messages/messages.js';

const MESSAGES = 2_000;

/** Which part of a send a table or index belongs to (SQLite's dbstat names both). */
function partOf(name: string, table: string): string {
  if (name.startsWith('messages_fts') || table.startsWith('messages_fts')) return 'full-text index';
  if (table === 'messages') return 'message row and its indexes';
  if (table === 'inbox') return 'inbox row and its indexes';
  if (table === 'events') return 'event log';
  return `other (${table})`;
}

/** Bytes of every table and index, by part, after a checkpoint (the WAL folded into the file). */
async function bytesByPart(ctx: HostContext): Promise<Map<string, number>> {
  await sql`pragma wal_checkpoint(TRUNCATE)`.execute(ctx.store.db);
  const rows = await sql<{ name: string; table: string; bytes: number }>`
    select d.name as name, coalesce(m.tbl_name, d.name) as "table", sum(d.pgsize) as bytes
    from dbstat d left join sqlite_master m on m.name = d.name
    group by d.name`.execute(ctx.store.db);
  const parts = new Map<string, number>();
  for (const r of rows.rows)
    parts.set(partOf(r.name, r.table), (parts.get(partOf(r.name, r.table)) ?? 0) + r.bytes);
  return parts;
}

/**
 * What one message of `body` costs on disk in SQLite: pages of every table and index grown by
 * 2,000 DMs to one agent (page-level, so slack in half-filled pages counts, as on disk), by part.
 */
export async function storagePerMessage(
  body: string,
): Promise<{ bytesPerMessage: number; breakdown: string }> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-bench-storage-'));
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    await initHome(ctx);
    await addPrincipal(ctx, { name: 'bot', kind: 'agent' });
    const owner = await resolvePrincipal(ctx, 'owner');
    for (let i = 0; i < 100; i++) await sendMessage(ctx, owner, { to: 'bot', body });
    const before = await bytesByPart(ctx);
    for (let i = 0; i < MESSAGES; i++) await sendMessage(ctx, owner, { to: 'bot', body });
    const after = await bytesByPart(ctx);
    const grown = [...after].map(
      ([part, bytes]) => [part, (bytes - (before.get(part) ?? 0)) / MESSAGES] as const,
    );
    const total = grown.reduce((sum, [, b]) => sum + b, 0);
    const breakdown = grown
      .filter(([, b]) => b > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([part, b]) => `${part} ${b.toFixed(0)} B (${((b / total) * 100).toFixed(0)} %)`)
      .join(', ');
    return { bytesPerMessage: total, breakdown };
  } finally {
    await ctx.store.close();
    rmSync(home, { recursive: true, force: true });
  }
}
