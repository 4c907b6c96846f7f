import { type Kysely, type Migration, type MigrationProvider, sql } from 'kysely';
import { AGENT_DRIVERS, INBOX_PENDING, MESSAGES_BY_REPLY } from '../migration-sql-shared.js';
import {
  AGENT_MANAGERS,
  AGENT_RUNS,
  APPROVALS,
  CHANNELS_BY_ACTIVITY,
  DISPATCH_ATTEMPTS,
  IDEMPOTENCY,
  INITIAL,
  INVITATION_BLOCKS,
  INVITATIONS,
  READ_RECEIPTS,
  SESSIONS_TOKENS,
  TELEGRAM,
  TELEGRAM_APPROVALS,
  TELEGRAM_REACTIONS,
} from './migration-sql.js';

/** Numbered, append-only. Never edit a released migration: add the next number. */
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
  // PostgreSQL's events learn their transaction and sends get a server function (postgres/
  // migrations.ts). SQLite has one writer at a time, so seq order is commit order: nothing to do.
  '008_commit_order': {
    async up() {},
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
  // PostgreSQL's batched send function (postgres/migrations.ts). SQLite groups sends in the
  // process (group-commit.ts): nothing to do.
  '011_send_batches': {
    async up() {},
  },
  // Agents the host runs (docs/agents.md): a run spec per agent, registered by `sluice agent run`,
  // supervised by the `sluice serve` of the same machine and home, which holds a lease on it.
  '012_agent_runs': {
    async up(db: Kysely<unknown>) {
      for (const statement of AGENT_RUNS) await sql.raw(statement).execute(db);
    },
  },
  // PostgreSQL's sends take their recipients' queue rows before their seq, so inbox order is
  // history order (postgres/send-order.ts). SQLite has one writer at a time: it always was.
  '013_inbox_in_history_order': {
    async up() {},
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
  // The page's sidebar lists a person's channels by recent activity (docs/web.md): each
  // membership carries its channel's newest message seq (a trigger keeps it), and a partial index
  // serves "my channels, most recent first" as one range walk whatever the count (issue 28).
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
  // How a message came in when not sent directly (`telegram`), shown to a model beside `sender`.
  '020_message_origin': {
    async up(db: Kysely<unknown>) {
      await sql.raw('alter table messages add column origin text').execute(db);
    },
  },
  // Every read of what is pending (the model's unread page, the harness's delivery, the hook, the
  // queue page) walks this index: only pending entries, in inbox order, however many the agent
  // has already consumed. Its list must stay the one core/pending.ts PENDING_STATES gives, in that
  // order: a query uses the index only when its condition is written the same (store/ops/pending.ts).
  '021_inbox_pending': {
    async up(db: Kysely<unknown>) {
      for (const statement of INBOX_PENDING) await sql.raw(statement).execute(db);
    },
  },
  // Replies by the message they answer (`message.status`: who answered), whatever the channel holds.
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

export const sqliteMigrations: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
