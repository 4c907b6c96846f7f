// The SQL of the SQLite migrations (migrations.ts numbers them), one constant per migration.
/**
 * One row per (person, principal whose invitations they refuse); the primary key answers "does
 * this person block that inviter". Invitations are counted per inviter for the pending cap.
 */
export const INVITATION_BLOCKS = [
  `create table invitation_blocks (principal_id text not null references principals(id),
     blocked_id text not null references principals(id), created_at text not null,
     primary key (principal_id, blocked_id))`,
  `create index invitations_by_inviter on invitations (invited_by)`,
];

export const TELEGRAM_REACTIONS = [
  `create table telegram_reactions (
     message_id text primary key, channel_id text not null, chat_id text not null,
     telegram_message_id integer not null, person_id text not null, state text, created_at text not null,
     updated_at text not null)`,
  `create index telegram_reactions_open on telegram_reactions (channel_id, created_at)`,
];

/** One row per (approval request, chat): the card's message id (null when Telegram refused it). */
export const TELEGRAM_APPROVALS = [
  `create table telegram_approvals (
     approval_id text not null, chat_id text not null, telegram_message_id integer,
     shown text not null, created_at text not null, updated_at text not null,
     primary key (approval_id, chat_id))`,
  `create index telegram_approvals_open on telegram_approvals (shown)`,
];

export const INITIAL = [
  `create table meta (key text primary key, value text not null)`,
  `create table principals (
     id text primary key, name text not null unique, kind text not null check (kind in ('person','agent')),
     settlement text not null default 'explicit' check (settlement in ('explicit','turn')), created_at text not null)`,
  `create table tokens (token_hash text primary key, principal_id text not null references principals(id), created_at text not null)`,
  `create table channels (
     id text primary key, name text not null unique, kind text not null check (kind in ('dm','group')),
     dm_key text unique, created_at text not null, created_by text not null references principals(id))`,
  `create table memberships (
     channel_id text not null references channels(id), principal_id text not null references principals(id),
     joined_at text not null, left_at text, primary key (channel_id, principal_id))`,
  `create index memberships_by_principal on memberships (principal_id, channel_id)`,
  `create table messages (
     seq integer primary key autoincrement, id text not null unique, channel_id text not null references channels(id),
     author_id text not null references principals(id), created_at text not null, body text not null,
     body_bytes integer not null, subject text, reply_to text, actions text not null default '[]',
     attachments text not null default '[]', revision integer not null default 1, edited_at text, deleted_at text)`,
  `create index messages_by_channel on messages (channel_id, seq)`,
  `create table message_revisions (
     message_seq integer not null references messages(seq), revision integer not null, body text not null,
     subject text, edited_at text not null, edited_by text not null, primary key (message_seq, revision))`,
  `create table message_media (message_seq integer not null references messages(seq), media_id text not null,
     primary key (message_seq, media_id))`,
  `create index message_media_by_media on message_media (media_id)`,
  `create table inbox (
     agent_id text not null references principals(id), position integer not null, message_seq integer not null references messages(seq),
     message_id text not null, channel_id text not null, state text not null
       check (state in ('waiting','handled','archived','withdrawn','returned')),
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
     owner text not null, started_at text not null, ended_at text, failure_kind text, reason text)`,
  `create index turns_open on turns (agent_id, state)`,
  `create table coverage (
     turn_id text not null references turns(id), message_seq integer not null, sha256 text not null,
     prefix_units integer not null, total_units integer not null, complete integer not null default 0,
     primary key (turn_id, message_seq))`,
  `create table events (seq integer primary key autoincrement, kind text not null, agent_id text, channel_id text,
     message_id text, created_at text not null)`,
  `create table media (id text primary key, sha256 text not null, name text not null, mime text not null,
     size integer not null, created_at text not null, created_by text not null references principals(id))`,
  `create index media_by_sha on media (sha256)`,
  `create table read_marks (channel_id text not null, principal_id text not null, last_read_seq integer not null,
     updated_at text not null, primary key (channel_id, principal_id))`,
  // Full text: an external-content FTS5 index kept in step by triggers, so bodies are stored once.
  `create virtual table messages_fts using fts5(subject, body, content='messages', content_rowid='seq', tokenize='unicode61')`,
  `create trigger messages_fts_insert after insert on messages begin
     insert into messages_fts(rowid, subject, body) values (new.seq, coalesce(new.subject, ''), new.body); end`,
  `create trigger messages_fts_update after update of body, subject on messages begin
     insert into messages_fts(messages_fts, rowid, subject, body) values ('delete', old.seq, coalesce(old.subject, ''), old.body);
     insert into messages_fts(rowid, subject, body) values (new.seq, coalesce(new.subject, ''), new.body); end`,
];

/**
 * Access tokens get a public id (for `token ls`/`revoke`), an expiry (null: a token minted before
 * expiries existed, kept working) and a last-used time. Login links are single-use and short-lived;
 * browser sessions are server-side rows whose secret only the cookie holds (the table keeps its hash).
 */
export const SESSIONS_TOKENS = [
  `alter table tokens add column id text`,
  `alter table tokens add column expires_at text`,
  `alter table tokens add column last_used_at text`,
  `update tokens set id = 'tok_' || substr(token_hash, 1, 16) where id is null`,
  `create unique index tokens_by_id on tokens (id)`,
  `create table login_links (code_hash text primary key, principal_id text not null references principals(id),
     created_at text not null, expires_at text not null, used_at text)`,
  `create table sessions (id text primary key, secret_hash text not null unique,
     principal_id text not null references principals(id), created_at text not null, expires_at text not null,
     last_seen_at text not null)`,
  `create index sessions_by_principal on sessions (principal_id)`,
];

/**
 * A client's idempotency key for a send, per principal: the primary key makes a second store with
 * the same key impossible, and the row commits in the message's own transaction. The request's
 * SHA-256 tells a retry (same request: the first result) from a reuse (another request: conflict).
 */
export const IDEMPOTENCY = [
  `create table idempotency_keys (principal_id text not null references principals(id), key text not null,
     request_sha256 text not null, message_id text not null, channel_id text not null, message_seq integer not null,
     created_at text not null, primary key (principal_id, key))`,
  `create index idempotency_keys_by_age on idempotency_keys (principal_id, created_at)`,
];

/**
 * A person is put into a group only by accepting an invitation (docs/security.md, "Who may do
 * what"): until then they are no member, see nothing and get nothing. One row per (channel,
 * invitee); the index lists a person's invitations and counts one inviter's pending ones.
 */
export const INVITATIONS = [
  `create table invitations (channel_id text not null references channels(id),
     principal_id text not null references principals(id), invited_by text not null references principals(id),
     created_at text not null, primary key (channel_id, principal_id))`,
  `create index invitations_by_invitee on invitations (principal_id, invited_by, channel_id)`,
];

/**
 * `activity_seq`: the event seq of the channel's newest message while a member, or just past the
 * newest event when they joined (a channel just made or joined sorts first: its join appends the
 * next event). Never lowered, so a keyset walk never meets a channel twice. Left memberships are
 * out of the index. Events are never pruned, so the backfill finds every channel's last message.
 */
export const CHANNELS_BY_ACTIVITY = [
  `alter table memberships add column activity_seq integer not null default 0`,
  `update memberships set activity_seq = last.seq
     from (select channel_id, max(seq) as seq from events where kind = 'message.created' group by channel_id) as last
    where last.channel_id = memberships.channel_id`,
  `create index memberships_by_activity on memberships (principal_id, activity_seq desc, channel_id desc) where left_at is null`,
  `create trigger memberships_activity after insert on events when new.kind = 'message.created' begin
     update memberships set activity_seq = new.seq
      where channel_id = new.channel_id and left_at is null and activity_seq < new.seq; end`,
];

/**
 * The Telegram bridge: one-time pairing codes (hashed, 10 minutes, single use), the Telegram users
 * paired with a person (and the agent their messages go to), and every part sent to a chat, so a
 * restarted bridge neither loses nor repeats what it already sent.
 */
export const TELEGRAM = [
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
export const READ_RECEIPTS = [
  `alter table turns add column receipt text not null default 'written' check (receipt in ('written','seen'))`,
  `create table coverage_offers (turn_id text not null references turns(id), result_sha256 text not null,
     message_seq integer not null, sha256 text not null, offset_units integer not null, end_units integer not null,
     total_units integer not null, primary key (turn_id, result_sha256, message_seq))`,
];

/**
 * How many driver turns carried a waiting message without settling (client error, client or driver
 * died): counted when a turn is dispatched, so a crash still counts. A row exists only while a
 * message has unsettled attempts; the driver returns it with its reason after a few (drivers.md).
 */
export const DISPATCH_ATTEMPTS = [
  `create table dispatch_attempts (agent_id text not null references principals(id), message_seq integer not null,
     attempts integer not null, last_reason text, updated_at text not null, primary key (agent_id, message_seq))`,
];

/** One row per (agent, person who manages it); the primary key answers "is this person a manager". */
export const AGENT_MANAGERS = [
  `create table agent_managers (agent_id text not null references principals(id),
     person_id text not null references principals(id), created_at text not null, primary key (agent_id, person_id))`,
];

export const AGENT_RUNS = [
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
 * An approval request per question a driven client asked (docs/approvals.md). `subject` is the JSON
 * of what the client asked, exactly; `fingerprint` names "the same thing asked again" so a retried
 * turn reuses the request; `applied_at` is set once, when a driver hands the decision to the
 * client, so a decision is applied at most once. Rules allow one exact tool or command prefix of
 * one agent without asking; the policy row holds an agent's settings (absent: the defaults).
 */
export const APPROVALS = [
  `create table approvals (id text primary key, agent_id text not null references principals(id), turn_id text,
     client text not null check (client in ('claude','codex')),
     kind text not null check (kind in ('tool','command','file_change','user_input')),
     subject text not null, fingerprint text not null,
     status text not null check (status in ('pending','allowed','denied','expired')), note text,
     decided_by text references principals(id), decided_at text, applied_at text,
     created_at text not null, expires_at text not null)`,
  `create index approvals_by_agent on approvals (agent_id, status, created_at)`,
  `create index approvals_by_fingerprint on approvals (agent_id, fingerprint, status)`,
  `create index approvals_by_status on approvals (status, created_at)`,
  `create table approval_rules (id text primary key, agent_id text not null references principals(id),
     kind text not null check (kind in ('tool','command_prefix')), value text not null,
     created_by text not null references principals(id), created_at text not null, unique (agent_id, kind, value))`,
  `create table approval_policies (agent_id text primary key references principals(id),
     ask text not null check (ask in ('client','deny')), timeout_ms integer not null,
     updated_by text not null references principals(id), updated_at text not null)`,
];
