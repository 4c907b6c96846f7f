import type { ColumnType, Generated } from 'kysely';
import type { InboxState, MessageSource, PrincipalKind } from '../core/wire/kinds.js';
import type { ApprovalPoliciesTable, ApprovalRulesTable, ApprovalsTable } from './approvals-schema.js';
import type {
  TelegramApprovalsTable,
  TelegramLinksTable,
  TelegramPairCodesTable,
  TelegramReactionsTable,
  TelegramSentTable,
} from './telegram-schema.js';

/** Table shapes shared by every dialect. Times are ISO-8601 UTC strings so they sort as text. */
export type { InboxState, MessageSource, PrincipalKind }; // the wire's words (core/wire), declared once
export type SettlementMode = 'explicit' | 'turn';
export type ChannelKind = 'dm' | 'group';
export type TurnState = 'open' | 'succeeded' | 'failed' | 'abandoned';

export { isPendingState, PENDING_STATES } from '../core/pending.js';
export type {
  TelegramApprovalsTable,
  TelegramLinksTable,
  TelegramPairCodesTable,
  TelegramReactionsTable,
  TelegramSentTable,
} from './telegram-schema.js';

export interface MetaTable {
  key: string;
  value: string;
}

export interface PrincipalsTable {
  id: string;
  name: string;
  kind: PrincipalKind;
  settlement: SettlementMode;
  created_at: string;
}

export interface TokensTable {
  token_hash: string;
  principal_id: string;
  created_at: string;
  /** Public handle for `token ls`/`token revoke` (migration 003; legacy rows get one derived from the hash). */
  id: string;
  /** Null: a token without expiry (every token minted before migration 003). */
  expires_at: string | null;
  last_used_at: string | null;
  /** What the token is for, as its creator wrote it (migration 014); null when none was given. */
  note: string | null;
}

/** A single-use sign-in link for a person (migration 003); only the code's hash is kept. */
export interface LoginLinksTable {
  code_hash: string;
  principal_id: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** A browser session (migration 003): the cookie holds the secret, the row its hash. */
export interface SessionsTable {
  id: string;
  secret_hash: string;
  principal_id: string;
  created_at: string;
  expires_at: string;
  last_seen_at: string;
}

export interface ChannelsTable {
  id: string;
  name: string;
  kind: ChannelKind;
  /** Sorted member ids for a DM, so a pair has exactly one DM channel. */
  dm_key: string | null;
  created_at: string;
  created_by: string;
}

export interface MembershipsTable {
  channel_id: string;
  principal_id: string;
  joined_at: string;
  left_at: string | null;
  /**
   * The event seq of the channel's newest message while a member, or just past the newest event
   * when they joined: the sidebar's "most recent activity first" order (migration 017, a trigger).
   */
  activity_seq: Generated<number>;
}

/** A pending invitation of a person to a group; accepting it makes the membership. */
export interface InvitationsTable {
  channel_id: string;
  principal_id: string;
  invited_by: string;
  created_at: string;
}

/** A principal whose invitations a person refuses: they are dropped silently (migration 016). */
export interface InvitationBlocksTable {
  principal_id: string;
  blocked_id: string;
  created_at: string;
}

/** A person who manages an agent (may pause or resume its whole queue, change its managers). */
export interface AgentManagersTable {
  agent_id: string;
  person_id: string;
  created_at: string;
}

/**
 * An agent the host runs (docs/agents.md): what to run (`driver`, `cwd`, `args` as a JSON array),
 * where (`machine`, `home`: only a `sluice serve` of that machine and home supervises it), what
 * its managers asked for (`desired`, `restart_seq`), and what the supervisor holding the lease
 * (`holder` until `held_until`) last reported.
 */
export interface AgentRunsTable {
  agent_id: string;
  driver: 'claude' | 'codex';
  cwd: string;
  args: string;
  machine: string;
  home: string;
  desired: 'running' | 'stopped';
  restart_seq: Generated<number>;
  state: Generated<'starting' | 'running' | 'stopped' | 'crashed'>;
  pid: number | null;
  last_error: string | null;
  /** The model error the running driver reported last (cleared by a turn that succeeds). */
  model_error: Generated<string | null>;
  restarts: Generated<number>;
  state_at: string | null;
  holder: string | null;
  held_until: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/**
 * The driver process that drives an agent now (migration 024; docs/drivers.md, "One agent, one
 * driver"): at most one per agent, holding its row until `held_until` and renewing it while it runs.
 */
export interface AgentDriversTable {
  agent_id: string;
  /** A random id of the driver process (a pid alone is not unique across machines). */
  holder: string;
  client: 'claude' | 'codex';
  pid: number;
  machine: string;
  home: string;
  /** 1 when `sluice serve` runs it (docs/agents.md), 0 for a `sluice drive` started by hand. */
  supervised: number;
  started_at: string;
  held_until: string;
}

export interface MessagesTable {
  seq: Generated<number>;
  id: string;
  channel_id: string;
  author_id: string;
  created_at: string;
  body: string;
  body_bytes: number;
  subject: string | null;
  reply_to: string | null;
  /** JSON text of the structured actions (cards/buttons). */
  actions: string;
  /** JSON text of `[{attachment_id, name, mime, size}]`: references only, never bytes. */
  attachments: string;
  revision: number;
  edited_at: string | null;
  deleted_at: string | null;
  /** How it came in when not sent directly (`telegram`: relayed by the bridge); migration 020. */
  origin: ColumnType<string | null, string | null | undefined, never>;
}

export interface MessageRevisionsTable {
  message_seq: number;
  revision: number;
  body: string;
  subject: string | null;
  edited_at: string;
  edited_by: string;
}

export interface MessageMediaTable {
  message_seq: number;
  media_id: string;
}

export interface InboxTable {
  agent_id: string;
  position: number;
  message_seq: number;
  message_id: string;
  channel_id: string;
  state: InboxState;
  source: MessageSource;
  body_bytes: number;
  created_at: string;
  updated_at: string;
  returned_reason: string | null;
  failure_kind: string | null;
}

export interface ReceiptsTable {
  agent_id: string;
  message_id: string;
  archived_at: string;
}

export interface QueuesTable {
  agent_id: string;
  generation: string;
  revision: number;
  paused: number;
  paused_reason: string | null;
  next_position: number;
  waiting: number;
  returned: number;
  pending_person: number;
  pending_agent: number;
  pending_unknown: number;
}

export interface TurnsTable {
  id: string;
  agent_id: string;
  state: TurnState;
  session_key: string | null;
  owner: string;
  started_at: string;
  ended_at: string | null;
  failure_kind: string | null;
  reason: string | null;
  /** What proves a read reached the client in this turn (migration 006; see {@link TurnReceipt}). */
  receipt: TurnReceipt;
}

/**
 * `written`: the transport wrote the read's result completely (HTTP response finished, stdout write
 * done). `seen`: the client's own output stream showed the result (drivers); the MCP server only
 * offers the coverage and the driver confirms it.
 */
export type TurnReceipt = 'written' | 'seen';

/**
 * Coverage a read offered in a `seen` turn, waiting for the driver to see its result in the
 * client's stream (migration 006). Keyed by the SHA-256 of the exact result text; never counted
 * by settlement until confirmed into `coverage`.
 */
export interface CoverageOffersTable {
  turn_id: string;
  result_sha256: string;
  message_seq: number;
  sha256: string;
  offset_units: number;
  end_units: number;
  total_units: number;
}

export interface CoverageTable {
  turn_id: string;
  message_seq: number;
  sha256: string;
  prefix_units: number;
  total_units: number;
  complete: number;
}

export interface EventsTable {
  seq: Generated<number>;
  kind: string;
  agent_id: string | null;
  channel_id: string | null;
  message_id: string | null;
  created_at: string;
}

export interface MediaTable {
  id: string;
  sha256: string;
  name: string;
  mime: string;
  size: number;
  created_at: string;
  created_by: string;
}

export interface ReadMarksTable {
  channel_id: string;
  principal_id: string;
  last_read_seq: number;
  updated_at: string;
}

/**
 * Driver turns that carried a waiting message and never settled (migration 007): counted at
 * dispatch, cleared when a turn carrying it settles; at the limit the message is returned.
 */
export interface DispatchAttemptsTable {
  agent_id: string;
  message_seq: number;
  attempts: number;
  /** Why the last such turn ended (client error text), or null when nobody could say (a kill). */
  last_reason: string | null;
  updated_at: string;
}

/** A send's client-chosen idempotency key (per principal) and the message it stored. */
export interface IdempotencyKeysTable {
  principal_id: string;
  key: string;
  /** SHA-256 hex of the request as the client stated it: a reuse with another request is a conflict. */
  request_sha256: string;
  message_id: string;
  channel_id: string;
  message_seq: number;
  created_at: string;
}

export interface Database {
  meta: MetaTable;
  principals: PrincipalsTable;
  tokens: TokensTable;
  login_links: LoginLinksTable;
  sessions: SessionsTable;
  channels: ChannelsTable;
  memberships: MembershipsTable;
  invitations: InvitationsTable;
  invitation_blocks: InvitationBlocksTable;
  agent_managers: AgentManagersTable;
  agent_runs: AgentRunsTable;
  agent_drivers: AgentDriversTable;
  messages: MessagesTable;
  message_revisions: MessageRevisionsTable;
  message_media: MessageMediaTable;
  inbox: InboxTable;
  receipts: ReceiptsTable;
  queues: QueuesTable;
  turns: TurnsTable;
  dispatch_attempts: DispatchAttemptsTable;
  coverage: CoverageTable;
  coverage_offers: CoverageOffersTable;
  events: EventsTable;
  media: MediaTable;
  read_marks: ReadMarksTable;
  idempotency_keys: IdempotencyKeysTable;
  telegram_pair_codes: TelegramPairCodesTable;
  telegram_links: TelegramLinksTable;
  telegram_sent: TelegramSentTable;
  approvals: ApprovalsTable;
  approval_rules: ApprovalRulesTable;
  approval_policies: ApprovalPoliciesTable;
  telegram_reactions: TelegramReactionsTable;
  telegram_approvals: TelegramApprovalsTable;
}
