import type { HostContext } from '../src/host/identity/context.js';

const TABLES = [
  'principals',
  'tokens',
  'channels',
  'memberships',
  'messages',
  'inbox',
  'receipts',
  'queues',
  'turns',
  'coverage',
  'events',
  'media',
] as const;

/**
 * A fingerprint of everything a rejected input must not change: row counts of every table plus
 * the inbox states and queue counters. Equal snapshots before and after = nothing changed.
 */
export async function stateSnapshot(ctx: HostContext): Promise<string> {
  const db = ctx.store.db;
  const parts: unknown[] = [];
  for (const table of TABLES) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst();
    parts.push([table, Number(row?.n ?? 0)]);
  }
  parts.push(
    await db
      .selectFrom('inbox')
      .select(['agent_id', 'position', 'state'])
      .orderBy('agent_id')
      .orderBy('position')
      .execute(),
  );
  parts.push(await db.selectFrom('queues').selectAll().orderBy('agent_id').execute());
  parts.push(await db.selectFrom('turns').select(['id', 'state']).orderBy('id').execute());
  return JSON.stringify(parts);
}
