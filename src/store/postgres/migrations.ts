import {
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type Kysely,
  type Migration,
  type MigrationProvider,
  PostgresIntrospector,
  type SchemaMetadata,
  sql,
  type TableMetadata,
} from 'kysely';
import { AGENT_DRIVERS, INBOX_PENDING, MESSAGES_BY_REPLY } from '../migration-sql-shared.js';
import { INITIAL } from './initial-schema.js';
import { messageOrigin } from './message-origin.js';
import {
  AGENT_MANAGERS,
  AGENT_RUNS,
  APPROVALS,
  CHANNELS_BY_ACTIVITY,
  COMMIT_ORDER,
  DISPATCH_ATTEMPTS,
  IDEMPOTENCY,
  INVITATION_BLOCKS,
  INVITATIONS,
  READ_RECEIPTS,
  SEND_BATCHES,
  SESSIONS_TOKENS,
  TELEGRAM,
  TELEGRAM_APPROVALS,
  TELEGRAM_REACTIONS,
  WRITE_LOCK_CLASS,
} from './migration-sql.js';
import { inboxInHistoryOrder } from './send-order.js';

/**
 * Numbered, append-only, with the same names as src/store/sqlite/migrations.ts so both backends
 * are always at the same schema version. Only the SQL differs where the databases differ:
 * identity columns for `seq`, `bytea` for blobs, a GIN expression index for text search, and a
 * statement trigger that announces every commit that appends to `events` (LISTEN/NOTIFY).
 */
const migrations: Record<string, Migration> = {
  '001_initial': {
    async up(db: Kysely<unknown>) {
      for (const statement of INITIAL) await sql.raw(statement).execute(db);
    },
  },
  '002_idempotency': {
    async up(db: Kysely<unknown>) {
      for (const statement of IDEMPOTENCY) await sql.raw(statement).execute(db);
    },
  },
  '003_sessions_tokens': {
    async up(db: Kysely<unknown>) {
      for (const statement of SESSIONS_TOKENS) await sql.raw(statement).execute(db);
    },
  },
  '004_invitations': {
    async up(db: Kysely<unknown>) {
      for (const statement of INVITATIONS) await sql.raw(statement).execute(db);
    },
  },
  '005_telegram': {
    async up(db: Kysely<unknown>) {
      for (const statement of TELEGRAM) await sql.raw(statement).execute(db);
    },
  },
  '006_read_receipts': {
    async up(db: Kysely<unknown>) {
      for (const statement of READ_RECEIPTS) await sql.raw(statement).execute(db);
    },
  },
  '007_dispatch_attempts': {
    async up(db: Kysely<unknown>) {
      for (const statement of DISPATCH_ATTEMPTS) await sql.raw(statement).execute(db);
    },
  },
  '008_commit_order': {
    async up(db: Kysely<unknown>) {
      for (const statement of COMMIT_ORDER) await sql.raw(statement).execute(db);
    },
  },
  // The page shows an agent's presence from its newest turn (host/identity/presence.ts): one index probe
  // instead of sorting every turn the agent ever had (86 ms at 100,000 turns without it).
  '009_turns_by_start': {
    async up(db: Kysely<unknown>) {
      await sql.raw('create index turns_by_start on turns (agent_id, started_at)').execute(db);
    },
  },
  // Who manages an agent (docs/security.md, "Who may do what"): besides the agent itself and the
  // host owner, only its managers may pause or resume its whole queue or change its managers.
  '010_agent_managers': {
    async up(db: Kysely<unknown>) {
      for (const statement of AGENT_MANAGERS) await sql.raw(statement).execute(db);
    },
  },
  '011_send_batches': {
    async up(db: Kysely<unknown>) {
      for (const statement of SEND_BATCHES) await sql.raw(statement).execute(db);
    },
  },
  // Agents the host runs (docs/agents.md): a run spec per agent, registered by `sluice agent run`,
  // supervised by the `sluice serve` of the same machine and home, which holds a lease on it.
  '012_agent_runs': {
    async up(db: Kysely<unknown>) {
      for (const statement of AGENT_RUNS) await sql.raw(statement).execute(db);
    },
  },
  // An agent's inbox order is the channel's history order (send-order.ts).
  '013_inbox_in_history_order': {
    async up(db: Kysely<unknown>) {
      for (const statement of inboxInHistoryOrder(WRITE_LOCK_CLASS)) await sql.raw(statement).execute(db);
    },
  },
  // A label a person gives a token (`sluice token create NAME --note TEXT`), shown by `token ls`.
  '014_token_notes': {
    async up(db: Kysely<unknown>) {
      await sql.raw('alter table tokens add column note text').execute(db);
    },
  },
  // Durable approvals (docs/approvals.md): what a driven client asked a person, the decision and
  // when the driver applied it; per agent, the rules that allow without asking and the policy.
  '015_approvals': {
    async up(db: Kysely<unknown>) {
      for (const statement of APPROVALS) await sql.raw(statement).execute(db);
    },
  },
  // Consent (docs/security.md, "Consent before membership"): whose invitations a person refuses
  // to see, and an index that counts one inviter's pending invitations for its cap.
  '016_invitation_blocks': {
    async up(db: Kysely<unknown>) {
      for (const statement of INVITATION_BLOCKS) await sql.raw(statement).execute(db);
    },
  },
  // The page's sidebar lists a person's channels by recent activity (sqlite/migrations.ts says how).
  '017_channels_by_activity': {
    async up(db: Kysely<unknown>) {
      for (const statement of CHANNELS_BY_ACTIVITY) await sql.raw(statement).execute(db);
    },
  },
  // A person's own Telegram messages and the status the bridge last showed on each as a reaction
  // (docs/telegram.md, "Where your message stands").
  '018_telegram_reactions': {
    async up(db: Kysely<unknown>) {
      for (const statement of TELEGRAM_REACTIONS) await sql.raw(statement).execute(db);
    },
  },
  // The Allow / Deny card the Telegram bridge sent a decider's chat for each approval request, and
  // what it last showed (docs/telegram.md, "Approvals from Telegram").
  '019_telegram_approvals': {
    async up(db: Kysely<unknown>) {
      for (const statement of TELEGRAM_APPROVALS) await sql.raw(statement).execute(db);
    },
  },
  // How a message came in (message-origin.ts): a column, and the send functions store it.
  '020_message_origin': {
    async up(db: Kysely<unknown>) {
      for (const statement of messageOrigin(WRITE_LOCK_CLASS)) await sql.raw(statement).execute(db);
    },
  },
  // Each agent's pending entries in inbox order, with and without a source (as SQLite's migration
  // 021): what every read of what is pending walks, however many the agent has already consumed.
  '021_inbox_pending': {
    async up(db: Kysely<unknown>) {
      for (const statement of INBOX_PENDING) await sql.raw(statement).execute(db);
    },
  },
  // Replies by the message they answer (as SQLite's migration 022): `message.status` of an old
  // message in a busy channel reads its replies, not the channel.
  '022_messages_by_reply': {
    async up(db: Kysely<unknown>) {
      await sql.raw(MESSAGES_BY_REPLY).execute(db);
    },
  },
  // The model error a running host-run agent's driver reports (docs/agents.md, `modelError`):
  // kept apart from last_error, which says why a driver exited.
  '023_agent_run_model_error': {
    async up(db: Kysely<unknown>) {
      await sql.raw('alter table agent_runs add column model_error text').execute(db);
    },
  },
  // Who drives each agent now: one driver per agent (docs/drivers.md, "One agent, one driver").
  '024_agent_drivers': {
    async up(db: Kysely<unknown>) {
      await sql.raw(AGENT_DRIVERS).execute(db);
    },
  },
};

// Constants the store's other PostgreSQL modules use, declared with the SQL that uses them.
export { EVENTS_CHANNEL, SEARCH_DOCUMENT } from './initial-schema.js';
export { WRITE_LOCK_CLASS } from './migration-sql.js';

export const postgresMigrations: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};

/**
 * Kysely's Migrator asks the introspector whether its tables exist, and PostgreSQL's stock
 * introspector reads every column of every table in every schema. On a shared database that is
 * slow, and it fails outright when another schema is being dropped at that moment (its catalog
 * functions raise "schema does not exist"). This one lists only the tables of the current schema
 * (names, no columns: all the Migrator needs).
 */
export class SchemaTablesIntrospector implements DatabaseIntrospector {
  readonly #db: Kysely<unknown>;
  readonly #stock: PostgresIntrospector;
  constructor(db: Kysely<unknown>) {
    this.#db = db;
    this.#stock = new PostgresIntrospector(db);
  }
  getSchemas(): Promise<SchemaMetadata[]> {
    return this.#stock.getSchemas();
  }
  async getTables(): Promise<TableMetadata[]> {
    const rows = await sql<{ name: string; schema: string; kind: string }>`
      select c.relname as name, n.nspname as schema, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'p', 'v', 'm')`.execute(this.#db);
    return rows.rows.map((r) => ({
      name: r.name,
      schema: r.schema,
      isView: r.kind === 'v' || r.kind === 'm',
      columns: [],
    }));
  }
  async getMetadata(): Promise<DatabaseMetadata> {
    return { tables: await this.getTables() };
  }
}
