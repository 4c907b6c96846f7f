import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { cutUtf8 } from '../../../core/preview.js';
import { quoteInput, revealInvisible } from '../../../core/text.js';
import type { ApprovalRuleView, ApprovalView } from '../../../host/approvals/index.js';
import {
  approvalPolicyOf,
  decideApprovalRequest,
  listApprovals,
  listRulesOf,
  revokeRule,
  setApprovalPolicy,
  showApproval,
} from '../../../host/approvals/index.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';
import { writeList } from '../list-output.js';

// `sluice approval …` (docs/approvals.md): a person sees and decides what driven agents asked.
// The agent lock refuses the whole group for an agent, and the host refuses an agent anyway.

/**
 * What a request asks, on one line: the command, else the tool and its input, else the change,
 * else the questions.
 */
export function approvalSummary(a: ApprovalView): string {
  const s = a.subject;
  const questions = Array.isArray(s.questions)
    ? (s.questions as { question?: unknown }[]).map((q) => String(q.question ?? '')).join(' | ')
    : JSON.stringify(s.questions ?? {});
  const what =
    s.command ??
    (s.tool !== undefined ? `${s.tool} ${JSON.stringify(s.input ?? {})}` : (s.diff ?? questions));
  return cutUtf8(revealInvisible(what), 100).text;
}

const COLUMNS = [
  { header: 'ID', cell: (a: ApprovalView) => a.id },
  { header: 'AGENT', cell: (a: ApprovalView) => a.agent },
  { header: 'STATUS', cell: (a: ApprovalView) => a.status },
  { header: 'KIND', cell: (a: ApprovalView) => a.kind },
  { header: 'ASKED', cell: (a: ApprovalView) => new Date(a.createdAt).toISOString() },
  { header: 'WHAT', cell: approvalSummary },
] as const;

const RULE_COLUMNS = [
  { header: 'ID', cell: (r: ApprovalRuleView) => r.id },
  { header: 'KIND', cell: (r: ApprovalRuleView) => r.kind },
  { header: 'VALUE', cell: (r: ApprovalRuleView) => r.value },
  { header: 'BY', cell: (r: ApprovalRuleView) => r.createdBy ?? '' },
  { header: 'SINCE', cell: (r: ApprovalRuleView) => new Date(r.createdAt).toISOString() },
] as const;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--timeout 10m` (s, m, h or d) → milliseconds. */
export function parseApprovalTimeout(text: string): number {
  const match = /^(\d{1,6})([smhd])$/.exec(text.trim());
  if (!match)
    throw new SluiceError(
      'invalid_params',
      `--timeout must look like 90s, 10m, 2h or 1d, not ${quoteInput(text, 40)}`,
    );
  return Number(match[1]) * (UNIT_MS[match[2] as string] as number);
}

/** The line a decision prints: what was decided, by whom, and what the model will be told. */
function decisionLine(a: ApprovalView): string {
  const note = a.note === null ? '' : ` (note: ${revealInvisible(a.note)})`;
  return `${a.id} ${a.status} by ${a.decidedBy ?? 'nobody'}: ${a.agent} ${approvalSummary(a)}${note}\n`;
}

export function registerApprovalCommands(program: Command): void {
  const approval = program
    .command('approval')
    .description('see and decide what driven agents ask permission for (owner and managers)');
  approval
    .command('ls')
    .description('approval requests you may decide: pending first, newest first')
    .option('--agent <name>', 'only this agent’s requests')
    .option('--all', 'decided and expired ones too (the history)')
    .option(
      '--json',
      'print [{id, agent, client, kind, subject, status, note, createdAt, expiresAt, decidedBy, decidedAt, turnId}]',
    )
    .action(
      action(async ({ host, actor }, opts: { agent?: string; all?: boolean; json?: boolean }) => {
        const rows = await listApprovals(host, await actor(), {
          agent: opts.agent,
          status: opts.all ? 'all' : 'pending',
        });
        await writeList(rows, { json: opts.json, columns: COLUMNS, empty: 'no approval requests' });
      }),
    );
  approval
    .command('show <id>')
    .description('one request as JSON, its subject whole however large (lists and the page show it cut)')
    .action(
      action(async ({ host, actor }, id: string) => {
        const shown = await showApproval(host, await actor(), id);
        // Controls are escaped by JSON already; format characters (U+202E …) are not.
        await writeOut(`${revealInvisible(JSON.stringify(shown, null, 2), { keepNewlines: true })}\n`);
      }),
    );
  approval
    .command('allow <id>')
    .description('allow a pending request: the waiting turn goes on within a second')
    .option('--note <text>', 'a note kept with the decision')
    .option('--always', 'also allow this exact command (or tool) for the agent from now on, unasked')
    .action(
      action(async ({ host, actor }, id: string, opts: { note?: string; always?: boolean }) => {
        const decided = await decideApprovalRequest(host, await actor(), {
          id,
          decision: 'allow',
          note: opts.note,
          always: opts.always,
        });
        await writeOut(decisionLine(decided));
      }),
    );
  approval
    .command('answer <id> <text>')
    .description('answer a question an agent asked (a user-input request): the text goes back as the answer')
    .action(
      action(async ({ host, actor }, id: string, text: string) => {
        const decided = await decideApprovalRequest(host, await actor(), {
          id,
          decision: 'allow',
          note: text,
          answering: true,
        });
        await writeOut(decisionLine(decided));
      }),
    );
  approval
    .command('deny <id>')
    .description('deny a pending request; the model is told the note')
    .option('--note <text>', 'what the model is told (default: that a person denied it)')
    .action(
      action(async ({ host, actor }, id: string, opts: { note?: string }) => {
        const decided = await decideApprovalRequest(host, await actor(), {
          id,
          decision: 'deny',
          note: opts.note,
        });
        await writeOut(decisionLine(decided));
      }),
    );
  approval
    .command('rules <agent>')
    .description('an agent’s allow-always rules; --revoke drops one')
    .option('--revoke <rule-id>', 'revoke this rule: the next such request is asked again')
    .option('--json', 'print [{id, agent, kind, value, createdBy, createdAt}]')
    .action(
      action(async ({ host, actor }, agentName: string, opts: { revoke?: string; json?: boolean }) => {
        const me = await actor();
        if (opts.revoke !== undefined) {
          const rules = await listRulesOf(host, me, agentName);
          if (!rules.some((r) => r.id === opts.revoke))
            throw new SluiceError('not_found', `${agentName} has no approval rule ${opts.revoke}`);
          await revokeRule(host, me, opts.revoke);
          await writeOut(`revoked ${opts.revoke}\n`);
          return;
        }
        const rules = await listRulesOf(host, me, agentName);
        await writeList(rules, { json: opts.json, columns: RULE_COLUMNS, empty: 'no approval rules' });
      }),
    );
  approval
    .command('policy <agent>')
    .description('an agent’s approval policy: which requests are asked, and the timeout that denies')
    .option(
      '--ask <mode>',
      'client (ask a person whatever the client asks; default) or deny (refuse unasked)',
    )
    .option('--timeout <duration>', 'how long a request waits before it is denied (default 10m)')
    .action(
      action(async ({ host, actor }, agentName: string, opts: { ask?: string; timeout?: string }) => {
        const me = await actor();
        if (opts.ask !== undefined && opts.ask !== 'client' && opts.ask !== 'deny')
          throw new SluiceError('invalid_params', '--ask must be client or deny');
        const policy =
          opts.ask === undefined && opts.timeout === undefined
            ? await approvalPolicyOf(host, me, agentName)
            : await setApprovalPolicy(host, me, agentName, {
                ask: opts.ask as 'client' | 'deny' | undefined,
                timeoutMs: opts.timeout === undefined ? undefined : parseApprovalTimeout(opts.timeout),
              });
        await writeOut(`${JSON.stringify({ agent: agentName, ...policy })}\n`);
      }),
    );
}
