// An unattended agent's requests for permission (`approval.*`, the `approval.changed` push;
// docs/rpc.md "Approvals", docs/approvals.md).

/**
 * An approval request on the wire. `subject` is what the client asked, exactly as it sent it:
 * Claude's `tool` and `input`; Codex's `command` and `cwd`, `diff`, `questions`; the model's
 * `reason`. Times are milliseconds since the epoch; `decidedBy` is a person's name (null: pending,
 * or the timeout decided).
 */
/**
 * What a client asked, as a person sees it. Claude: `tool` and `input`, the tool call exactly as
 * the client sent it. Codex: `command` (as the client sent it, shell wrapper included) and `cwd`;
 * `diff` (the proposed file changes); `questions` (a request for user input); `reason` (the
 * model's own justification, when it gave one).
 */
export interface ApprovalSubject {
  tool?: string;
  input?: unknown;
  command?: string;
  cwd?: string;
  diff?: string;
  questions?: unknown;
  reason?: string;
}

export interface Approval {
  id: string;
  agent: string;
  client: 'claude' | 'codex';
  kind: 'tool' | 'command' | 'file_change' | 'user_input';
  /** What the client asked, exactly as it sent it (cut when large: see `subjectCut`). */
  subject: ApprovalSubject;
  /**
   * Present only when `subject` is shown cut (its long texts end in `… [N more characters …]`):
   * the size of the whole subject's JSON. `sluice approval show ID` prints it whole.
   */
  subjectCut?: { bytes: number };
  turnId: string | null;
  status: 'pending' | 'allowed' | 'denied' | 'expired';
  note: string | null;
  createdAt: number;
  expiresAt: number;
  decidedBy: string | null;
  decidedAt: number | null;
}

/** An "allow always" rule on the wire (`approval.rules`): one exact tool, or one command prefix. */
export interface ApprovalRule {
  id: string;
  agent: string;
  kind: 'tool' | 'command_prefix';
  value: string;
  createdBy: string | null;
  createdAt: number;
}
