/** Who asked for permission: the driven client. */
export type ApprovalClient = 'claude' | 'codex';
/** What is asked: a tool call (Claude), a shell command, a file change, an answer from a person. */
export type ApprovalKind = 'tool' | 'command' | 'file_change' | 'user_input';
export type ApprovalStatus = 'pending' | 'allowed' | 'denied' | 'expired';
/** `tool`: one exact tool name; `command_prefix`: an exact command, or it followed by plain arguments. */
export type ApprovalRuleKind = 'tool' | 'command_prefix';
/** `client`: ask a person whatever the client asks; `deny`: refuse every request without asking. */
export type ApprovalAsk = 'client' | 'deny';

/** One request a driven client made for a person's decision (migration 015, docs/approvals.md). */
export interface ApprovalsTable {
  id: string;
  agent_id: string;
  /** The Sluice turn it was asked in, when the driver knew it. */
  turn_id: string | null;
  client: ApprovalClient;
  kind: ApprovalKind;
  /** JSON of what the client asked, exactly (tool and input; command and cwd; the changes). */
  subject: string;
  /** SHA-256 hex of the canonical request: the same thing asked again has the same fingerprint. */
  fingerprint: string;
  status: ApprovalStatus;
  note: string | null;
  decided_by: string | null;
  decided_at: string | null;
  /** When a driver handed the decision to the client: set once (a decision applies at most once). */
  applied_at: string | null;
  created_at: string;
  expires_at: string;
}

/** "Allow always" for one agent: one exact tool, or one exact command prefix (migration 015). */
export interface ApprovalRulesTable {
  id: string;
  agent_id: string;
  kind: ApprovalRuleKind;
  value: string;
  created_by: string;
  created_at: string;
}

/** An agent's approval settings (migration 015); no row means the defaults. */
export interface ApprovalPoliciesTable {
  agent_id: string;
  ask: ApprovalAsk;
  timeout_ms: number;
  updated_by: string;
  updated_at: string;
}
