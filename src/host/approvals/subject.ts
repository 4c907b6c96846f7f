import { sha256Hex } from '../../core/fragment.js';
// The subject's shape is declared once, with the wire's approval (core/wire/approvals.ts).
import type { ApprovalSubject } from '../../core/wire/index.js';
import type { ApprovalClient, ApprovalKind, ApprovalRuleKind } from '../../store/approvals-schema.js';

export type { ApprovalSubject };

/** A client's request for permission, as a driver records it. */
export interface ApprovalAsk {
  client: ApprovalClient;
  kind: ApprovalKind;
  subject: ApprovalSubject;
  /** The Sluice turn it was asked in, if the driver knows it. */
  turnId: string | null;
}

/** JSON with object keys sorted at every level: one text per value, whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * "The same thing asked again": the SHA-256 of the client, the kind and the subject without the
 * model's free-text `reason` (a retried turn words it anew). Two requests with equal fingerprints
 * would run exactly the same tool input or command in the same folder.
 */
export function approvalFingerprint(ask: Pick<ApprovalAsk, 'client' | 'kind' | 'subject'>): string {
  const { reason: _reason, ...subject } = ask.subject;
  return sha256Hex(canonicalJson({ client: ask.client, kind: ask.kind, subject }));
}

/** The POSIX shell wrapper Codex puts around a command: `/bin/bash -lc '<command>'`. */
const SHELL_WRAPPED = /^\/(?:usr\/)?bin\/(?:ba|z)?sh -l?c '([^']*)'$/;

/**
 * The command line a command-prefix rule is matched against: Claude's `Bash` tool input
 * `command`, or Codex's command with its shell wrapper taken off (only a wrapper with no quote
 * inside; anything else is matched as given). Undefined when the request runs no command.
 */
export function commandLineOf(ask: Pick<ApprovalAsk, 'client' | 'kind' | 'subject'>): string | undefined {
  const { subject } = ask;
  if (ask.kind === 'tool' && subject.tool === 'Bash') {
    const command = (subject.input as { command?: unknown } | null | undefined)?.command;
    return typeof command === 'string' ? command : undefined;
  }
  if (ask.kind !== 'command' || typeof subject.command !== 'string') return undefined;
  return SHELL_WRAPPED.exec(subject.command)?.[1] ?? subject.command;
}

/**
 * Characters that let a shell run more than the command a rule names (chaining, pipes,
 * substitution, redirection, globbing of other commands, line breaks): a command with any of them
 * after the prefix never matches a prefix rule, so `git status` never allows `git status; rm -rf ~`.
 */
const SHELL_CONTROL = /[;&|`$<>(){}\\\n\r*?[\]!#~'"]/;

/**
 * Whether a rule allows the request without asking. `tool`: the tool name is exactly the rule's
 * (Claude). `command_prefix`: the command line is exactly the prefix, or the prefix, a space and
 * plain arguments (no shell control characters).
 */
export function ruleAllows(
  rule: { kind: ApprovalRuleKind; value: string },
  ask: Pick<ApprovalAsk, 'client' | 'kind' | 'subject'>,
): boolean {
  if (rule.kind === 'tool') return ask.kind === 'tool' && ask.subject.tool === rule.value;
  const line = commandLineOf(ask);
  if (line === undefined || rule.value.trim() === '') return false;
  // The exact command a person allowed; anything longer only with plain arguments.
  if (line === rule.value) return true;
  return !SHELL_CONTROL.test(line) && line.startsWith(`${rule.value} `);
}

/**
 * The "allow always" rule an allowed request stands for: its exact command line for a command (a
 * Claude `Bash` call included), its tool name for any other tool; none for file changes or user input.
 */
export function ruleFor(
  ask: Pick<ApprovalAsk, 'client' | 'kind' | 'subject'>,
): { kind: ApprovalRuleKind; value: string } | undefined {
  const line = commandLineOf(ask);
  if (line !== undefined) return { kind: 'command_prefix', value: line };
  if (ask.kind === 'tool' && typeof ask.subject.tool === 'string')
    return { kind: 'tool', value: ask.subject.tool };
  return undefined;
}
