// The SQL of the PostgreSQL migrations after the first (initial-schema.ts), one constant per
// migration (migrations.ts numbers them), and the write lock's class that SQL shares with the store.

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

// Text columns that lists are ordered by use the "C" collation: byte order, as SQLite compares,
// whatever collation the database was created with.

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
export const IDEMPOTENCY = [
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
export const INVITATIONS = [
  `create table invitations (channel_id text not null references channels(id),
     principal_id text not null references principals(id), invited_by text not null references principals(id),
     created_at text collate "C" not null, primary key (channel_id, principal_id))`,
  `create index invitations_by_invitee on invitations (principal_id, invited_by, channel_id)`,
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
     message_seq bigint not null, sha256 text not null, offset_units integer not null, end_units integer not null,
     total_units integer not null, primary key (turn_id, result_sha256, message_seq))`,
];

/**
 * How many driver turns carried a waiting message without settling (client error, client or driver
 * died): counted when a turn is dispatched, so a crash still counts. A row exists only while a
 * message has unsettled attempts; the driver returns it with its reason after a few (drivers.md).
 */
export const DISPATCH_ATTEMPTS = [
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
export const COMMIT_ORDER = [
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
export const AGENT_MANAGERS = [
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
export const SEND_BATCHES = [
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
 * As on SQLite, with a row trigger calling a function. The update takes the channel's membership
 * row locks, so two sends into one channel commit one after the other (sends to its agents already
 * do, on their queue rows); `activity_seq < new.seq` keeps a late commit of a lower seq from moving
 * a channel back.
 */
export const CHANNELS_BY_ACTIVITY = [
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
export const APPROVALS = [
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
