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
import { messageOrigin } from './message-origin.js';
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
};

/**
 * One row per (person, principal whose invitations they refuse); the primary key answers "does
 * this person block that inviter". Invitations are counted per inviter for the pending cap.
 */
const INVITATION_BLOCKS = [
  `create table invitation_blocks (principal_id text not null references principals(id),
     blocked_id text not null references principals(id), created_at text not null,
     primary key (principal_id, blocked_id))`,
  `create index invitations_by_inviter on invitations (invited_by)`,
];

const TELEGRAM_REACTIONS = [
  `create table telegram_reactions (
     message_id text primary key, channel_id text not null, chat_id text not null,
     telegram_message_id integer not null, person_id text not null, state text, created_at text not null,
     updated_at text not null)`,
  `create index telegram_reactions_open on telegram_reactions (channel_id, created_at)`,
];

/** One row per (approval request, chat): the card's message id (null when Telegram refused it). */
const TELEGRAM_APPROVALS = [
  `create table telegram_approvals (
     approval_id text not null, chat_id text not null, telegram_message_id integer,
     shown text not null, created_at text not null, updated_at text not null,
     primary key (approval_id, chat_id))`,
  `create index telegram_approvals_open on telegram_approvals (shown)`,
];

// Text columns that lists are ordered by use the "C" collation: byte order, as SQLite compares,
// whatever collation the database was created with.

/** The NOTIFY channel every host LISTENs on; the payload is the schema the write happened in. */
export const EVENTS_CHANNEL = 'sluice_events';

/**
 * The text-search document of a message. Search queries repeat this exact expression so the
 * planner uses the GIN index. The cut keeps any tsvector under PostgreSQL's 1 MB limit whatever
 * the body (up to 8 MB) holds: search sees the first 64K characters of subject and body.
 */
export const SEARCH_DOCUMENT = `to_tsvector('simple'::regconfig, left(coalesce(subject, '') || ' ' || body, 65536))`;

const INITIAL = [
  `create table meta (key text primary key, value text not null)`,
  `create table principals (
     id text primary key, name text collate "C" not null unique, kind text not null check (kind in ('person','agent')),
     settlement text not null default 'explicit' check (settlement in ('explicit','turn')), created_at text not null)`,
  `create table tokens (token_hash text primary key, principal_id text not null references principals(id), created_at text not null)`,
  `create table channels (
     id text primary key, name text collate "C" not null unique, kind text not null check (kind in ('dm','group')),
     dm_key text unique, created_at text not null, created_by text not null references principals(id))`,
  `create table memberships (
     channel_id text not null references channels(id), principal_id text not null references principals(id),
     joined_at text not null, left_at text, primary key (channel_id, principal_id))`,
  `create index memberships_by_principal on memberships (principal_id, channel_id)`,
  `create table messages (
     seq bigint generated by default as identity primary key, id text not null unique,
     channel_id text not null references channels(id), author_id text not null references principals(id),
     created_at text not null, body text not null, body_bytes integer not null, subject text, reply_to text,
     actions text not null default '[]', attachments text not null default '[]', revision integer not null default 1,
     edited_at text, deleted_at text)`,
  `create index messages_by_channel on messages (channel_id, seq)`,
  `create table message_revisions (
     message_seq bigint not null references messages(seq), revision integer not null, body text not null,
     subject text, edited_at text not null, edited_by text not null, primary key (message_seq, revision))`,
  `create table message_media (message_seq bigint not null references messages(seq), media_id text not null,
     primary key (message_seq, media_id))`,
  `create index message_media_by_media on message_media (media_id)`,
  `create table inbox (
     agent_id text not null references principals(id), position integer not null,
     message_seq bigint not null references messages(seq), message_id text not null, channel_id text not null,
     state text not null check (state in ('waiting','handled','archived','withdrawn','returned')),
     source text not null check (source in ('person','agent','unknown')), body_bytes integer not null,
     created_at text not null, updated_at text not null, returned_reason text, failure_kind text,
     primary key (agent_id, position), unique (agent_id, message_seq))`,
  `create index inbox_by_state on inbox (agent_id, state, position)`,
  `create index inbox_by_source on inbox (agent_id, source, state, position)`,
  `create index inbox_by_message on inbox (message_seq)`,
  `create table receipts (agent_id text not null, message_id text not null, archived_at text not null,
     primary key (agent_id, message_id))`,
  `create table queues (
     agent_id text primary key references principals(id), generation text not null, revision integer not null default 0,
     paused integer not null default 0, paused_reason text, next_position integer not null default 1,
     waiting integer not null default 0, returned integer not null default 0, pending_person integer not null default 0,
     pending_agent integer not null default 0, pending_unknown integer not null default 0)`,
  `create table turns (
     id text primary key, agent_id text not null references principals(id),
     state text not null check (state in ('open','succeeded','failed','abandoned')), session_key text,
     owner text not null, started_at text collate "C" not null, ended_at text, failure_kind text, reason text)`,
  `create index turns_open on turns (agent_id, state)`,
  `create table coverage (
     turn_id text not null references turns(id), message_seq bigint not null, sha256 text not null,
     prefix_units integer not null, total_units integer not null, complete integer not null default 0,
     primary key (turn_id, message_seq))`,
  `create table events (seq bigint generated by default as identity primary key, kind text not null, agent_id text,
     channel_id text, message_id text, created_at text not null)`,
  `create table media (id text primary key, sha256 text not null, name text not null, mime text not null,
     size bigint not null, created_at text not null, created_by text not null references principals(id))`,
  `create index media_by_sha on media (sha256)`,
  `create table read_marks (channel_id text not null, principal_id text not null, last_read_seq bigint not null,
     updated_at text not null, primary key (channel_id, principal_id))`,
  // Attachment bytes live in the database so every host can serve every attachment.
  `create table blobs (sha256 text primary key check (sha256 ~ '^[0-9a-f]{64}$'), bytes bytea not null,
     size bigint not null, created_at timestamptz not null default now())`,
  `create index messages_search on messages using gin (${SEARCH_DOCUMENT})`,
  // One notification per committing transaction: NOTIFY folds identical payloads within a
  // transaction and delivers them only at commit, so a rolled-back write announces nothing.
  `create function sluice_notify_events() returns trigger language plpgsql as $$
     begin perform pg_notify('${EVENTS_CHANNEL}', tg_table_schema); return null; end $$`,
  `create trigger events_notify after insert on events for each statement execute function sluice_notify_events()`,
];

/**
 * Access tokens get a public id (for `token ls`/`revoke`), an expiry (null: a token minted before
 * expiries existed, kept working) and a last-used time. Login links are single-use and short-lived;
 * browser sessions are server-side rows whose secret only the cookie holds (the table keeps its hash).
 */
const SESSIONS_TOKENS = [
  `alter table tokens add column id text`,
  `alter table tokens add column expires_at text`,
  `alter table tokens add column last_used_at text`,
  `update tokens set id = 'tok_' || substr(token_hash, 1, 16) where id is null`,
  `create unique index tokens_by_id on tokens (id)`,
  `create table login_links (code_hash text primary key, principal_id text not null references principals(id),
     created_at text not null, expires_at text not null, used_at text)`,
  `create table sessions (id text collate "C" primary key, secret_hash text not null unique,
     principal_id text not null references principals(id), created_at text not null, expires_at text not null,
     last_seen_at text not null)`,
  `create index sessions_by_principal on sessions (principal_id)`,
];

/**
 * A client's idempotency key for a send, per principal: the primary key makes a second store with
 * the same key impossible, and the row commits in the message's own transaction. The request's
 * SHA-256 tells a retry (same request: the first result) from a reuse (another request: conflict).
 */
const IDEMPOTENCY = [
  `create table idempotency_keys (principal_id text not null references principals(id), key text not null,
     request_sha256 text not null, message_id text not null, channel_id text not null, message_seq bigint not null,
     created_at text not null, primary key (principal_id, key))`,
  `create index idempotency_keys_by_age on idempotency_keys (principal_id, created_at)`,
];

/**
 * A person is put into a group only by accepting an invitation (docs/security.md, "Who may do
 * what"): until then they are no member, see nothing and get nothing. One row per (channel,
 * invitee); the index lists a person's invitations and counts one inviter's pending ones.
 */
const INVITATIONS = [
  `create table invitations (channel_id text not null references channels(id),
     principal_id text not null references principals(id), invited_by text not null references principals(id),
     created_at text collate "C" not null, primary key (channel_id, principal_id))`,
  `create index invitations_by_invitee on invitations (principal_id, invited_by, channel_id)`,
];

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

/**
 * The Telegram bridge: one-time pairing codes (hashed, 10 minutes, single use), the Telegram users
 * paired with a person (and the agent their messages go to), and every part sent to a chat, so a
 * restarted bridge neither loses nor repeats what it already sent.
 */
const TELEGRAM = [
  `create table telegram_pair_codes (code_hash text primary key, person_id text not null references principals(id),
     created_at text not null, expires_at text not null, used_at text)`,
  `create table telegram_links (telegram_user_id text primary key, chat_id text not null,
     person_id text not null references principals(id), agent_id text references principals(id), paired_at text not null)`,
  `create index telegram_links_by_person on telegram_links (person_id)`,
  `create table telegram_sent (message_id text not null, chat_id text not null, part integer not null,
     sent_at text not null, primary key (message_id, chat_id, part))`,
];

/**
 * Received means received (DESIGN.md I9): a turn says what proves a read reached its client, and a
 * read in a driven (`seen`) turn only offers its coverage, keyed by the SHA-256 of the exact result
 * text, until the driver sees that text in the client's stream.
 */
const READ_RECEIPTS = [
  `alter table turns add column receipt text not null default 'written' check (receipt in ('written','seen'))`,
  `create table coverage_offers (turn_id text not null references turns(id), result_sha256 text not null,
     message_seq bigint not null, sha256 text not null, offset_units integer not null, end_units integer not null,
     total_units integer not null, primary key (turn_id, result_sha256, message_seq))`,
];

/**
 * How many driver turns carried a waiting message without settling (client error, client or driver
 * died): counted when a turn is dispatched, so a crash still counts. A row exists only while a
 * message has unsettled attempts; the driver returns it with its reason after a few (drivers.md).
 */
const DISPATCH_ATTEMPTS = [
  `create table dispatch_attempts (agent_id text not null references principals(id), message_seq bigint not null,
     attempts integer not null, last_reason text, updated_at text not null, primary key (agent_id, message_seq))`,
];

/** First key of the transaction-scoped advisory lock: exclusive for writes, shared for sends. */
export const WRITE_LOCK_CLASS = 0x51c4;

/**
 * Sends commit in parallel (docs/postgres.md, "Guarantees with several hosts"). An event's seq
 * then no longer tells commit order: a lower seq can commit after a higher one was read. Each
 * event records its transaction (`xid`, an xid8 that never wraps), and readers take only final
 * events — below the oldest Sluice writer of the schema still running (postgres/commit-order.ts) —
 * in (xid, seq) order: anything that commits later sorts after them.
 *
 * `sluice_send` is a whole send in one round trip: the shared write lock (sends run beside each
 * other; every other write takes it exclusively), the message (only from a current member: null
 * otherwise, nothing stored), each recipient's next FIFO position taken under its queue row lock
 * (in agent order, so two sends to the same agents cannot deadlock), the inbox entries, and the
 * events. The search index is the messages table's expression index, updated in the same statement.
 */
const COMMIT_ORDER = [
  `alter table events add column xid xid8 not null default pg_current_xact_id()`,
  `create index events_by_commit on events (xid, seq)`,
  `create function sluice_send(p_id text, p_channel_id text, p_author_id text, p_created_at text, p_body text,
     p_body_bytes integer, p_subject text, p_reply_to text, p_actions text, p_attachments text, p_source text)
   returns bigint language plpgsql as $$
   declare v_seq bigint;
   begin
     perform pg_advisory_xact_lock_shared(${WRITE_LOCK_CLASS}, hashtext(current_schema()));
     insert into messages (id, channel_id, author_id, created_at, body, body_bytes, subject, reply_to, actions,
       attachments, revision, edited_at, deleted_at)
     select p_id, p_channel_id, p_author_id, p_created_at, p_body, p_body_bytes, p_subject, p_reply_to, p_actions,
       p_attachments, 1, null, null
     where exists (select 1 from memberships
       where channel_id = p_channel_id and principal_id = p_author_id and left_at is null)
     returning seq into v_seq;
     if v_seq is null then return null; end if;
     with recipients as (
       select q.agent_id from queues q
       join memberships m on m.principal_id = q.agent_id and m.channel_id = p_channel_id and m.left_at is null
       join principals p on p.id = q.agent_id and p.kind = 'agent'
       where q.agent_id <> p_author_id
       order by q.agent_id for update of q
     ), taken as (
       update queues q set next_position = q.next_position + 1, waiting = q.waiting + 1, revision = q.revision + 1,
         pending_person = q.pending_person + (p_source = 'person')::int,
         pending_agent = q.pending_agent + (p_source = 'agent')::int,
         pending_unknown = q.pending_unknown + (p_source = 'unknown')::int
       from recipients r where q.agent_id = r.agent_id
       returning q.agent_id, q.next_position - 1 as position
     ), entries as (
       insert into inbox (agent_id, position, message_seq, message_id, channel_id, state, source, body_bytes,
         created_at, updated_at, returned_reason, failure_kind)
       select t.agent_id, t.position, v_seq, p_id, p_channel_id, 'waiting', p_source, p_body_bytes,
         p_created_at, p_created_at, null, null from taken t
       returning agent_id
     )
     insert into events (kind, agent_id, channel_id, message_id, created_at)
     select 'queue.changed', e.agent_id, null, p_id, p_created_at from entries e
     union all select 'message.created', null, p_channel_id, p_id, p_created_at;
     return v_seq;
   end $$`,
];

/** One row per (agent, person who manages it); the primary key answers "is this person a manager". */
const AGENT_MANAGERS = [
  `create table agent_managers (agent_id text not null references principals(id),
     person_id text not null references principals(id), created_at text not null, primary key (agent_id, person_id))`,
];

/**
 * Group commit on PostgreSQL (postgres/send-batch.ts): the plain sends a host has waiting, run by
 * one call in one transaction — one round trip, one commit and WAL flush, one notification for
 * all of them. Sends to the same agents otherwise commit one after another, each holding those
 * agents' queue rows through its own flush.
 *
 * Each send is `sluice_send` in a block of its own (a subtransaction), so one that fails is undone
 * alone and reports its SQLSTATE and message; a deadlock or serialization failure fails the whole
 * call, which the host runs again. Before any send, the call takes the shared write lock (at the
 * top level, so it is held to the commit whatever a block undoes) and locks every queue row the
 * batch can take a position from, in agent order, as `sluice_send` does: two batches, or a batch
 * and a single send, wait for each other instead of deadlocking. Membership cannot change meanwhile
 * (every other write takes the write lock exclusively). Positions and event seqs follow the array
 * order, so FIFO holds within the batch as between batches. At most 32 sends per call: each block
 * that writes takes a subtransaction id, and a transaction with more than 64 of them slows every
 * snapshot on the server.
 */
const SEND_BATCHES = [
  `create function sluice_send_many(p_id text[], p_channel_id text[], p_author_id text[], p_created_at text[],
     p_body text[], p_body_bytes integer[], p_subject text[], p_reply_to text[], p_actions text[],
     p_attachments text[], p_source text[])
   returns table (seq bigint, error_code text, error_message text) language plpgsql as $$
   begin
     perform pg_advisory_xact_lock_shared(${WRITE_LOCK_CLASS}, hashtext(current_schema()));
     perform 1 from queues q
       where q.agent_id in (select m.principal_id from memberships m
         where m.channel_id = any(p_channel_id) and m.left_at is null)
       order by q.agent_id for update of q;
     for i in 1 .. coalesce(array_length(p_id, 1), 0) loop
       error_code := null;
       error_message := null;
       begin
         seq := sluice_send(p_id[i], p_channel_id[i], p_author_id[i], p_created_at[i], p_body[i], p_body_bytes[i],
           p_subject[i], p_reply_to[i], p_actions[i], p_attachments[i], p_source[i]);
       exception when others then
         if sqlstate in ('40001', '40P01') then raise; end if;
         seq := null;
         get stacked diagnostics error_code = returned_sqlstate, error_message = message_text;
       end;
       return next;
     end loop;
   end $$`,
];

const AGENT_RUNS = [
  `create table agent_runs (agent_id text primary key references principals(id),
     driver text not null check (driver in ('claude','codex')), cwd text not null, args text not null,
     machine text not null, home text not null,
     desired text not null check (desired in ('running','stopped')), restart_seq integer not null default 0,
     state text not null default 'stopped' check (state in ('starting','running','stopped','crashed')),
     pid integer, last_error text, restarts integer not null default 0, state_at text,
     holder text, held_until text, created_by text not null references principals(id),
     created_at text not null, updated_at text not null)`,
  `create index agent_runs_by_place on agent_runs (machine, home)`,
];

/**
 * As on SQLite, with a row trigger calling a function. The update takes the channel's membership
 * row locks, so two sends into one channel commit one after the other (sends to its agents already
 * do, on their queue rows); `activity_seq < new.seq` keeps a late commit of a lower seq from moving
 * a channel back.
 */
const CHANNELS_BY_ACTIVITY = [
  `alter table memberships add column activity_seq bigint not null default 0`,
  `update memberships m set activity_seq = last.seq
     from (select channel_id, max(seq) as seq from events where kind = 'message.created' group by channel_id) as last
    where last.channel_id = m.channel_id`,
  `create index memberships_by_activity on memberships (principal_id, activity_seq desc, channel_id desc) where left_at is null`,
  `create function sluice_channel_activity() returns trigger language plpgsql as $$
   begin
     update memberships set activity_seq = new.seq
      where channel_id = new.channel_id and left_at is null and activity_seq < new.seq;
     return null;
   end $$`,
  `create trigger memberships_activity after insert on events
     for each row when (new.kind = 'message.created') execute function sluice_channel_activity()`,
];

/**
 * An approval request per question a driven client asked (docs/approvals.md). `subject` is the JSON
 * of what the client asked, exactly; `fingerprint` names "the same thing asked again" so a retried
 * turn reuses the request; `applied_at` is set once, when a driver hands the decision to the
 * client, so a decision is applied at most once. Rules allow one exact tool or command prefix of
 * one agent without asking; the policy row holds an agent's settings (absent: the defaults).
 */
const APPROVALS = [
  `create table approvals (id text primary key, agent_id text not null references principals(id), turn_id text,
     client text not null check (client in ('claude','codex')),
     kind text not null check (kind in ('tool','command','file_change','user_input')),
     subject text not null, fingerprint text not null,
     status text not null check (status in ('pending','allowed','denied','expired')), note text,
     decided_by text references principals(id), decided_at text, applied_at text,
     created_at text collate "C" not null, expires_at text not null)`,
  `create index approvals_by_agent on approvals (agent_id, status, created_at)`,
  `create index approvals_by_fingerprint on approvals (agent_id, fingerprint, status)`,
  `create index approvals_by_status on approvals (status, created_at)`,
  `create table approval_rules (id text primary key, agent_id text not null references principals(id),
     kind text not null check (kind in ('tool','command_prefix')), value text not null,
     created_by text not null references principals(id), created_at text collate "C" not null, unique (agent_id, kind, value))`,
  `create table approval_policies (agent_id text primary key references principals(id),
     ask text not null check (ask in ('client','deny')), timeout_ms integer not null,
     updated_by text not null references principals(id), updated_at text not null)`,
];
