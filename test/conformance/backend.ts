import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { addAgentManager } from '../../src/host/agents/agent-managers.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { tempHome } from '../support/host.js';

export type Backend = 'sqlite' | 'postgres';

/** The PostgreSQL server the suite uses (the machine's local one unless told otherwise). */
export const PG_BASE_URL = process.env.SLUICE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * The backends this run covers: `SLUICE_TEST_DB=sqlite|postgres` picks one; otherwise both, unless
 * `SLUICE_TEST_PG=off` (a machine without PostgreSQL) leaves PostgreSQL out.
 */
export function backendsUnderTest(): Backend[] {
  const chosen = process.env.SLUICE_TEST_DB;
  if (chosen === 'sqlite' || chosen === 'postgres') return [chosen];
  if (chosen !== undefined && chosen !== '')
    throw new Error(`SLUICE_TEST_DB must be sqlite or postgres, not ${chosen}`);
  return process.env.SLUICE_TEST_PG === 'off' ? ['sqlite'] : ['sqlite', 'postgres'];
}

/** A database URL for a fresh schema (created by the store on first open), named for leak checks. */
export function freshSchemaUrl(
  label: string,
  extra: Record<string, string> = {},
): { url: string; schema: string } {
  const schema = `t_${label.replace(/[^a-z0-9]/g, '_').slice(0, 30)}_${randomBytes(5).toString('hex')}`;
  const url = new URL(PG_BASE_URL);
  url.searchParams.set('schema', schema);
  url.searchParams.set('application_name', schema);
  for (const [k, v] of Object.entries(extra)) url.searchParams.set(k, v);
  return { url: url.toString(), schema };
}

/** Runs `fn` with an administrative client on the test database. */
export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_BASE_URL, application_name: 'sluice-test-admin' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Connections still open under an application name (the schema, for stores opened by this helper). */
export async function openConnections(applicationName: string): Promise<number> {
  return withAdmin(async (c) => {
    const r = await c.query<{ n: number }>(
      'select count(*)::int as n from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()',
      [applicationName],
    );
    return r.rows[0]?.n ?? 0;
  });
}

/** Waits (briefly: the server notices a closed socket asynchronously) until no connection remains. */
export async function expectNoConnections(applicationName: string, waitMs = 3000): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const open = await openConnections(applicationName);
    if (open === 0) return;
    if (Date.now() > deadline)
      throw new Error(`${open} PostgreSQL connection(s) leaked by ${applicationName}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await withAdmin((c) => c.query(`drop schema if exists "${schema}" cascade`));
}

export interface ConformanceHost {
  backend: Backend;
  ctx: HostContext;
  home: string;
  /** The `--db` value (undefined for the home's SQLite file). */
  db: string | undefined;
  owner: Principal;
  agent(name: string, settlement?: 'explicit' | 'turn'): Promise<Principal>;
  person(name: string): Promise<Principal>;
  /** Makes `person` a manager of `agent` (as the owner): only managers add an agent to a group. */
  manage(agent: string, person: string): Promise<void>;
  /** Opens a second host on the same database (another process's view), closed with this one. */
  sibling(): Promise<HostContext>;
  close(): Promise<void>;
}

/**
 * An initialised host on the backend: SQLite in a temp home, or PostgreSQL in a schema of its own
 * that is dropped on close — after checking that closing left no connection open.
 */
export async function openConformanceHost(backend: Backend, label = 'conf'): Promise<ConformanceHost> {
  const pgTarget = backend === 'postgres' ? freshSchemaUrl(label) : undefined;
  return openOn(backend, pgTarget, async () => {
    if (pgTarget) await dropSchema(pgTarget.schema);
  });
}

/**
 * Empties every table of a schema but the migrations' own and restarts its sequences, so the
 * schema can be used again. DELETE, not TRUNCATE: the tables hold a test's few rows, and TRUNCATE
 * makes new files for every table and index. Foreign keys and triggers are off for the deletes
 * (session_replication_role; the test server's user is a superuser).
 */
export async function emptySchema(schema: string): Promise<void> {
  await withAdmin(async (c) => {
    const tables = await c.query<{ name: string }>(
      `select tablename as name from pg_tables where schemaname = $1 and tablename not like 'kysely_migration%'`,
      [schema],
    );
    const sequences = await c.query<{ name: string }>(
      `select sequencename as name from pg_sequences where schemaname = $1`,
      [schema],
    );
    await c.query('begin');
    await c.query('set local session_replication_role = replica');
    for (const t of tables.rows) await c.query(`delete from "${schema}"."${t.name}"`);
    for (const q of sequences.rows) await c.query(`alter sequence "${schema}"."${q.name}" restart`);
    await c.query('commit');
  });
}

/**
 * A file's conformance hosts, one at a time. On PostgreSQL they share one schema: closing a host
 * (after the same check that it left no connection open) empties every table and restarts every
 * sequence, so the next host starts as on a fresh schema, without migrating one again (a fresh
 * schema costs the server 1-2 s on the 2-core test machine).
 * SQLite hosts get a fresh home each time (a new file is cheap). `release` drops the schema.
 */
export function conformanceHostSeries(
  backend: Backend,
  label = 'conf',
): { open(): Promise<ConformanceHost>; release(): Promise<void> } {
  const pgTarget = backend === 'postgres' ? freshSchemaUrl(label) : undefined;
  return {
    open: () =>
      openOn(backend, pgTarget, async () => {
        if (pgTarget) await emptySchema(pgTarget.schema);
      }),
    async release() {
      if (pgTarget) await dropSchema(pgTarget.schema);
    },
  };
}

async function openOn(
  backend: Backend,
  pgTarget: { url: string; schema: string } | undefined,
  afterClose: () => Promise<void>,
): Promise<ConformanceHost> {
  const { home, cleanup } = tempHome('sluice-conf-');
  const db = pgTarget?.url;
  const open = () => openHost({ home, db, durability: 'normal', pollMs: 10 });
  const siblings: HostContext[] = [];
  let ctx: HostContext | undefined;
  // Closes everything; the temp home and the schema go even when closing fails or leaked.
  const release = async () => {
    try {
      for (const s of siblings) await s.store.close();
      await ctx?.store.close();
      if (pgTarget) await expectNoConnections(pgTarget.schema);
    } finally {
      cleanup();
      await afterClose();
    }
  };
  let owner: Principal;
  try {
    ctx = await open();
    await initHome(ctx);
    owner = await resolvePrincipal(ctx, 'owner');
  } catch (err) {
    await release().catch(() => undefined);
    throw err;
  }
  const host = ctx;
  return {
    backend,
    ctx: host,
    home,
    db,
    owner,
    agent: (name, settlement = 'explicit') => addPrincipal(host, { name, kind: 'agent', settlement }),
    person: (name) => addPrincipal(host, { name, kind: 'person' }),
    async manage(agent, person) {
      await addAgentManager(host, owner, agent, person);
    },
    async sibling() {
      const other = await open();
      siblings.push(other);
      return other;
    },
    close: release,
  };
}
