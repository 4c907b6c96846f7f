// The delivery eval's agent and scenarios (issue 13 item 5): a scripted model that follows the
// delivery's instruction line to drain the inbox (handle what it has and fetch the next bounded
// batch in the same command), replies with a digest of each body it actually received, and a
// runner that records, per turn, which bodies reached the model whole — so a test can check
// that nothing was archived unseen.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fitsOnePage } from '../../../src/core/delivery-limits.js';
import { renderDelivery } from '../../../src/core/envelope.js';
import { shellOutputCap } from '../../../src/core/output-cap.js';
import { HOOK_LIMITS } from '../../../src/surfaces/hooks/adapters.js';
import {
  AGENT,
  agentShellCall,
  type Client,
  envelopesIn,
  inboxState,
  type Mode,
  repliesFromAgent,
  seedHome,
  send,
} from '../../hooks/delivery-scenarios.js';
import { SLUICE_BIN } from '../../support/host.js';
import {
  findTool,
  isMainAgentRequest,
  type ModelServer,
  type RecordedRequest,
  type Reply,
  toolResults,
  userContent,
} from './model-server.js';
import { makeClaudeHome, runClaude } from './run-claude.js';
import { makeCodexHome, runCodex } from './run-codex.js';

export type DrainScenario =
  | 'cold backlog of 2'
  | 'burst of 20'
  | 'oversized head'
  | 'arrival after the slice'
  | 'burst of 40'
  | 'oversized head + 5'
  | '20 of 5 KB'
  | '16 of 12 KB'
  | 'mixed CJK';

export const DRAIN_SCENARIOS: readonly DrainScenario[] = [
  'cold backlog of 2',
  'burst of 20',
  'oversized head',
  'arrival after the slice',
  'burst of 40',
  'oversized head + 5',
  '20 of 5 KB',
  '16 of 12 KB',
  'mixed CJK',
];

const SENDER = 'alice';

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The reply that proves which body it answers: the SHA-256 of the body as the model received it. */
export function proofReply(id: string, body: string): string {
  return `Done: ${id} sha256:${sha256(body)}`;
}

function smallBody(i: number): string {
  return `Message ${i + 1} for ${AGENT}: please confirm item #${i + 1} (ünïcode ✓, "quoted", <tag>, 'single').`;
}

/**
 * Larger than every delivery cap (10,000 characters / 16 KiB) and than Codex's 10,000-byte output
 * cap: 20,000 characters (~24.7 KB as JSON), or `units` characters.
 */
function oversizedBody(units = 20_000): string {
  const unit = 'Line of a long report — 長い報告 🚢 with "quotes", \'apostrophes\' and \\backslashes\\.\n';
  return `OVERSIZED-HEAD ${unit.repeat(Math.ceil(units / unit.length))}END`;
}

/** At most `bytes` UTF-8 bytes of `text`, whole code points. */
function cutToBytes(text: string, bytes: number): string {
  let out = '';
  let size = 0;
  for (const ch of text) {
    size += Buffer.byteLength(ch);
    if (size > bytes) break;
    out += ch;
  }
  return out;
}

/** About `bytes` UTF-8 bytes (5,000 by default), with characters JSON escapes and multi-byte ones. */
function reportBody(i: number, bytes = 5_000): string {
  const unit = `Paragraph of report ${i + 1} — 段落 ✓ "q" \\ line\n`;
  return cutToBytes(`REPORT ${i + 1}: ${unit.repeat(Math.ceil(bytes / 40))}`, bytes);
}

/** Mostly CJK text (3 bytes a character) of about `bytes` UTF-8 bytes, with some ASCII and emoji. */
function cjkBody(i: number, bytes: number): string {
  const unit = `第${i + 1}報：東京の会議は延期されました。確認してください 🚢 "OK" 한국어 텍스트도 있습니다。\n`;
  return cutToBytes(`CJK ${i + 1}: ${unit.repeat(Math.ceil(bytes / 60))}`, bytes);
}

/** Mixed CJK: 24 messages cycling 200 B, 1.5 KB and 6 KB of mostly 3-byte text (~62 KB). */
const MIXED_CJK_SIZES = [200, 1_500, 6_000] as const;

export function bodiesFor(scenario: DrainScenario): string[] {
  switch (scenario) {
    case 'cold backlog of 2':
      return [smallBody(0), smallBody(1)];
    case 'burst of 20':
      return Array.from({ length: 20 }, (_, i) => smallBody(i));
    case 'burst of 40':
      return Array.from({ length: 40 }, (_, i) => smallBody(i));
    case 'oversized head':
      return [oversizedBody(), smallBody(1)];
    case 'oversized head + 5':
      // As measured in issue 26: a head of ~12 KB, over the hook's 10,000-character cap but
      // within one listing page of Claude Code's shell.
      return [oversizedBody(10_500), ...Array.from({ length: 5 }, (_, i) => smallBody(i + 1))];
    case '20 of 5 KB':
      return Array.from({ length: 20 }, (_, i) => reportBody(i));
    case '16 of 12 KB':
      return Array.from({ length: 16 }, (_, i) => reportBody(i, 12_000));
    case 'mixed CJK':
      return Array.from({ length: 24 }, (_, i) => cjkBody(i, MIXED_CJK_SIZES[i % 3] as number));
    case 'arrival after the slice':
      return [smallBody(0)];
  }
}

// --- what reached the model -------------------------------------------------------------------

interface ReadPart {
  id: string;
  body: string;
  part?: { offset: number; total: number };
  next: string | null;
}

interface Page {
  /** A row with `part` holds a slice of its body (a page's last row, or a later page's first). */
  messages: { id: string; body: string; part?: { offset: number; total: number } }[];
  next: string | null;
  after?: string;
}

/** Every JSON value a shell command printed on its own line (receipts, pages, reads). */
function jsonLines(text: string): unknown[] {
  const out: unknown[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{') && !t.startsWith('[')) continue;
    try {
      out.push(JSON.parse(t));
    } catch {
      // a cut line: not received
    }
  }
  return out;
}

function isPage(v: unknown): v is Page {
  return typeof v === 'object' && v !== null && Array.isArray((v as Page).messages) && 'next' in v;
}

function isRead(v: unknown): v is ReadPart {
  const r = v as ReadPart;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof r.id === 'string' &&
    typeof r.body === 'string' &&
    'next' in r
  );
}

/**
 * The bodies a model request holds whole: envelope messages, listed pages, and parts (of pages or
 * reads) joined from offset 0 without a gap (within this one request's history).
 */
export function bodiesReceived(req: RecordedRequest): Map<string, string> {
  const seen = new Map<string, string>();
  for (const envelope of envelopesIn(req)) for (const m of envelope.messages) seen.set(m.id, m.body);
  const parts = new Map<string, { offset: number; total: number; body: string }[]>();
  for (const result of toolResults(req)) {
    for (const value of jsonLines(result.text)) {
      if (isPage(value)) {
        for (const m of value.messages) {
          if (m.part === undefined) seen.set(m.id, m.body);
          else parts.set(m.id, [...(parts.get(m.id) ?? []), { ...m.part, body: m.body }]);
        }
      } else if (isRead(value)) {
        if (value.part === undefined) seen.set(value.id, value.body);
        else parts.set(value.id, [...(parts.get(value.id) ?? []), { ...value.part, body: value.body }]);
      }
    }
  }
  for (const [id, list] of parts) {
    let joined = '';
    let total = -1;
    for (const p of [...list].sort((a, b) => a.offset - b.offset)) {
      if (p.offset !== joined.length) continue;
      joined += p.body;
      total = p.total;
    }
    if (joined.length === total) seen.set(id, joined);
  }
  return seen;
}

// --- the scripted agent -----------------------------------------------------------------------

const LIST = 'sluice message ls --json --include-body';

/** `handle` with its JSON lines in a here-document; what follows it goes on its first line. */
function handleCommand(items: readonly { id: string; body: string }[], then: readonly string[] = []): string {
  const lines = items.map((m) => JSON.stringify({ id: m.id, body: proofReply(m.id, m.body) }));
  const rest = then.map((c) => ` && ${c}`).join('');
  return `sluice message handle <<'SLUICE_EOF'${rest}\n${lines.join('\n')}\nSLUICE_EOF`;
}

/**
 * The drain the instruction line asks for, from the last envelope of a turn's first request: the
 * command to run now, and for an oversized head the listing to chain to its reply.
 */
function fromEnvelope(req: RecordedRequest): { command: string; afterHead?: string } | undefined {
  const envelope = envelopesIn(req).at(-1);
  if (envelope === undefined) return undefined;
  if (envelope.messages.length > 0) {
    // The listing the instruction names after handling these (it may carry the first page's budget).
    const named = userContent(req)
      .texts.map((t) => /`&& (sluice message ls [^`]*)`/.exec(t)?.[1])
      .findLast((c) => c !== undefined);
    return { command: handleCommand(envelope.messages, envelope.overflow > 0 ? [named ?? LIST] : []) };
  }
  // A head within one listing page: the listing the envelope names fetches it and what follows.
  if (envelope.oversizedHead?.list) return { command: envelope.oversizedHead.list };
  if (envelope.oversizedHead) {
    const id = envelope.oversizedHead.id;
    const command = `sluice message read ${id} --json`;
    return envelope.totalPending > 1 ? { command, afterHead: `${LIST} --since ${id}` } : { command };
  }
  return envelope.totalPending > 0 ? { command: LIST } : undefined;
}

export interface DrainLog {
  commands: string[];
  /** Codex `write_stdin` polls for a command still running after its yield time. */
  polls: number;
  /** Requests whose last tool output held no readable JSON (a cut output): re-listed. */
  unreadable: number;
  firstReplyAt: number | null;
}

/**
 * An agent that does what the delivery says: handles the complete bodies it holds with one
 * `sluice message handle` and, in the same command, runs the continuation it was given (the
 * instruction's `… ls --json --include-body`, a page's `next` and `after`, a read part's `next`).
 * Each reply carries the SHA-256 of the body the model received. An output it cannot read whole
 * is listed again alone, as a careful model would.
 */
export function drainAgent(log: DrainLog, onFirstRequest: () => void) {
  let seenFirst = false;
  const parts = new Map<string, string>();
  // The listing to run in the same command as the reply to a head read in parts.
  let afterHead: string | null = null;
  return (req: RecordedRequest, ctx: { mainIndex: number }): Reply => {
    if (!isMainAgentRequest(req)) return { text: 'ok' };
    if (!seenFirst) {
      seenFirst = true;
      onFirstRequest();
    }
    const call = (steps: string[]): Reply => {
      const command = steps.join(' && ');
      log.commands.push(command);
      if (log.firstReplyAt === null && command.startsWith('sluice message handle'))
        log.firstReplyAt = ctx.mainIndex + 1;
      return { toolCalls: [agentShellCall(req, command)] };
    };
    const results = toolResults(req);
    if (results.length === 0) {
      const start = fromEnvelope(req);
      if (start) {
        afterHead = start.afterHead ?? null;
        return call([start.command]);
      }
      if (userContent(req).texts.some((t) => /\[sluice\] \d+ pending message\(s\) for /.test(t)))
        return call([LIST]);
      return { text: 'Nothing in the inbox.' };
    }
    if (ctx.mainIndex > 60) return { text: 'giving up' };
    const lastText = results.at(-1)?.text ?? '';
    const running = /Process running with session ID (\d+)/.exec(lastText);
    if (running && findTool(req, 'write_stdin')) {
      log.polls++;
      const input = { session_id: Number(running[1]), chars: '', yield_time_ms: 30_000 };
      return { toolCalls: [{ name: 'write_stdin', input }] };
    }
    const values = jsonLines(lastText);
    const toHandle: { id: string; body: string }[] = [];
    const continuation: string[] = [];
    let readable = false;
    for (const value of values) {
      if (isPage(value)) {
        readable = true;
        // A page lists pending messages only, so what it shows was not handled yet; a body in
        // parts is joined, and handled once its last part is here.
        for (const m of value.messages) {
          if (m.part === undefined) {
            toHandle.push(m);
            continue;
          }
          const soFar = (parts.get(m.id) ?? '') + m.body;
          if (soFar.length < m.part.total) parts.set(m.id, soFar);
          else {
            parts.delete(m.id);
            toHandle.push({ id: m.id, body: soFar });
          }
        }
        // A head too large for the page: read it (in parts), and list after it with its reply.
        if (value.after !== undefined) afterHead = value.after;
        if (value.next) continuation.push(value.next);
      } else if (isRead(value)) {
        readable = true;
        const soFar = (parts.get(value.id) ?? '') + value.body;
        if (value.next) {
          parts.set(value.id, soFar);
          continuation.unshift(value.next);
        } else {
          parts.delete(value.id);
          toHandle.push({ id: value.id, body: soFar });
          if (afterHead !== null) continuation.push(afterHead);
          afterHead = null;
        }
      }
    }
    const expected = /sluice message (ls|read) /.test(log.commands.at(-1) ?? '');
    if (expected && !readable) {
      // The listing or read it ran did not come back whole (a client cut the output): list again, alone.
      log.unreadable++;
      return call([LIST]);
    }
    // Runs the continuation after handling, as the instruction says; a read of the next part of a
    // body comes first, since the list behind it follows that body (FIFO).
    const steps = toHandle.length > 0 ? [handleCommand(toHandle, continuation)] : continuation;
    if (steps.length > 0) return call(steps);
    return { text: 'Replied and archived.' };
  };
}

// --- running a scenario ------------------------------------------------------------------------

export interface DrainMetrics {
  client: Client;
  mode: Mode;
  scenario: DrainScenario;
  turns: number;
  /** Main-agent model requests over all turns, until the inbox is empty. */
  requests: number;
  toolCalls: number;
  requestBytes: number;
  wallMs: number;
  /** In turn 1: the model request (1-based) that answered with the first reply. */
  firstReplyAt: number | null;
  /** Largest tool output the model received (UTF-8 bytes of the tool result text). */
  maxToolOutputBytes: number;
}

export interface DrainTrace extends DrainMetrics {
  sent: Map<string, string>;
  lateId: string | null;
  commands: string[][];
  pendingAfter: string[][];
  archivedIds: string[];
  replyBodies: string[];
  exitCodes: (number | null)[];
  unreadable: number;
  /** Ids whose exact sent body some model request held whole. */
  receivedWhole: Set<string>;
  /** Ids a model request held with a body other than the one sent (must stay empty). */
  receivedAltered: string[];
  lastToolOutputs: string[];
  /** Per turn, the first 300 characters of every tool output (for failure messages). */
  toolOutputHeads: string[][];
}

function installHooks(
  client: Client,
  mode: Mode,
  home: string,
  target: { project?: string; claudeConfigDir?: string; codexHome?: string },
) {
  const args = [SLUICE_BIN, 'hooks', 'install', client, '--as', AGENT];
  if (target.project) args.push('--project', target.project);
  if (mode === 'metadata') args.push('--metadata');
  execFileSync(process.execPath, args, {
    env: {
      ...process.env,
      SLUICE_HOME: home,
      ...(target.codexHome ? { CODEX_HOME: target.codexHome } : {}),
      // The project's local MCP entry goes into the user's .claude.json: the client's own, not ours.
      ...(target.claudeConfigDir ? { CLAUDE_CONFIG_DIR: target.claudeConfigDir } : {}),
    },
    encoding: 'utf8',
  });
}

function sendFromCli(home: string, body: string): string {
  return execFileSync(process.execPath, [SLUICE_BIN, 'message', 'send', AGENT, '-m', body], {
    env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: SENDER },
    encoding: 'utf8',
  }).trim();
}

/** Runs one scenario with one client and mode, turn after turn until the inbox is empty. */
export async function runDrain(
  server: ModelServer,
  client: Client,
  mode: Mode,
  scenario: DrainScenario,
  maxTurns = 4,
): Promise<DrainTrace> {
  const { home, binDir } = await seedHome();
  const bodies = bodiesFor(scenario);
  const ids = await send(home, bodies);
  const sent = new Map(ids.map((id, i) => [id, bodies[i] as string]));
  const claudeHome = client === 'claude' ? makeClaudeHome('sluice-drain-claude-') : undefined;
  const codexHome = client === 'codex' ? makeCodexHome({ server }, 'sluice-drain-codex-') : undefined;
  if (claudeHome)
    installHooks('claude', mode, home, { project: claudeHome.cwd, claudeConfigDir: claudeHome.configDir });
  if (codexHome) installHooks('codex', mode, home, { codexHome: codexHome.codexHome });
  const env = { PATH: `${binDir}:${process.env.PATH}`, SLUICE_HOME: home, SLUICE_AS: AGENT };
  const trace: DrainTrace = {
    client,
    mode,
    scenario,
    turns: 0,
    requests: 0,
    toolCalls: 0,
    requestBytes: 0,
    wallMs: 0,
    firstReplyAt: null,
    maxToolOutputBytes: 0,
    sent,
    lateId: null,
    commands: [],
    pendingAfter: [],
    archivedIds: [],
    replyBodies: [],
    exitCodes: [],
    unreadable: 0,
    receivedWhole: new Set(),
    receivedAltered: [],
    lastToolOutputs: [],
    toolOutputHeads: [],
  };
  for (let turn = 0; turn < maxTurns; turn++) {
    if ((await inboxState(home)).pending.length === 0) break;
    const log: DrainLog = { commands: [], polls: 0, unreadable: 0, firstReplyAt: null };
    server.reset(
      drainAgent(log, () => {
        if (scenario === 'arrival after the slice' && turn === 0) {
          const body = 'LATE: arrived after the slice was rendered';
          trace.lateId = sendFromCli(home, body);
          sent.set(trace.lateId, body);
        }
      }),
    );
    const prompt = 'Check your Sluice inbox and handle what is there.';
    const run =
      client === 'claude'
        ? await runClaude({ server, prompt, home: claudeHome, env, timeoutMs: 150_000 })
        : await runCodex({ server, prompt, home: codexHome, env, timeoutMs: 150_000 });
    const main = server.mainCalls();
    trace.turns++;
    trace.exitCodes.push(run.code);
    trace.requests += main.length;
    trace.requestBytes += server.modelCalls().reduce((n, r) => n + r.bytes, 0);
    trace.wallMs += run.durationMs;
    trace.toolCalls += log.commands.length + log.polls;
    trace.unreadable += log.unreadable;
    trace.commands.push(log.commands);
    if (turn === 0) trace.firstReplyAt = log.firstReplyAt;
    for (const req of main) {
      for (const r of toolResults(req))
        trace.maxToolOutputBytes = Math.max(trace.maxToolOutputBytes, Buffer.byteLength(r.text));
      for (const [id, body] of bodiesReceived(req)) {
        if (sent.get(id) === body) trace.receivedWhole.add(id);
        else if (sent.has(id) && !trace.receivedAltered.includes(id)) trace.receivedAltered.push(id);
      }
    }
    const last = main.at(-1);
    trace.toolOutputHeads.push(last ? toolResults(last).map((r) => r.text.slice(0, 300)) : []);
    trace.lastToolOutputs.push(last ? (toolResults(last).at(-1)?.text ?? '').slice(0, 2000) : '');
    trace.pendingAfter.push((await inboxState(home)).pending);
    if (server.scriptErrors.length > 0) throw server.scriptErrors[0];
  }
  trace.archivedIds = (await inboxState(home)).archived;
  trace.replyBodies = await repliesFromAgent(home);
  return trace;
}

/** The table for docs/delivery.md, padded the way the repository's formatter lays it out. */
export function drainTable(rows: readonly DrainMetrics[]): string {
  const header = [
    'client',
    'scenario',
    'delivery',
    'first reply in request #',
    'turns',
    'model requests',
    'tool calls',
    'largest tool output (bytes)',
    'request bytes',
    'wall time (ms)',
  ];
  const numeric = header.map((_, i) => i >= 3);
  const body = rows.map((r) => [
    r.client,
    r.scenario,
    r.mode,
    String(r.firstReplyAt ?? '-'),
    String(r.turns),
    String(r.requests),
    String(r.toolCalls),
    String(r.maxToolOutputBytes),
    String(r.requestBytes),
    String(Math.round(r.wallMs)),
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...body.map((cells) => (cells[i] as string).length)),
  );
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (numeric[i] ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (numeric[i] ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  return [line(header), rule, ...body.map(line)].join('\n');
}

// --- the target (issue 26) ---------------------------------------------------------------------

/**
 * Bytes one page delivers per request at best: 80 % of the client's shell-output cap (24,000 of
 * Claude Code's 30,000 bytes; 8,000 of Codex's 10,000), the rest being the receipts and `next`.
 */
export function pageShare(client: Client): number {
  return Math.floor(shellOutputCap(client) * 0.8);
}

/**
 * Where the oldest message stands against the client's hook cap and its listing page: in the
 * envelope, over the hook's cap but within one page, or larger than a page (it comes in parts).
 */
export function headFit(client: Client, scenario: DrainScenario): 'envelope' | 'page' | 'parts' {
  const body = bodiesFor(scenario)[0] as string;
  const head = {
    id: '01KBAAAAAAAAAAAAAAAAAAAAAA',
    channel: `dm:${SENDER},${AGENT}`,
    from: SENDER,
    sender: 'person' as const,
    createdAt: '2026-12-01T00:00:00.000Z',
    subject: null,
    replyTo: null,
    body,
    attachments: [],
  };
  const rendered = renderDelivery({
    agent: AGENT,
    totalPending: 1,
    candidates: [head],
    limits: HOOK_LIMITS[client],
  });
  if (rendered.oversizedHead === null) return 'envelope';
  return fitsOnePage(JSON.stringify({ ...head, state: 'returned' }), HOOK_LIMITS[client].pageBytes)
    ? 'page'
    : 'parts';
}

/**
 * The most model requests a drain may take (issue 26): max(⌈n/16⌉, ⌈bytes/page share⌉) + 1 (the
 * closing request), + 1 when the envelope can carry no body because the oldest is over the hook's
 * cap, + 1 more when that head is larger than a page (read in parts). Null for the late arrival
 * (two turns by design).
 */
export function drainTarget(client: Client, scenario: DrainScenario): number | null {
  if (scenario === 'arrival after the slice') return null;
  const bodies = bodiesFor(scenario);
  const bytes = bodies.reduce((n, b) => n + Buffer.byteLength(b), 0);
  const fit = headFit(client, scenario);
  const extra = fit === 'envelope' ? 0 : fit === 'page' ? 1 : 2;
  return Math.max(Math.ceil(bodies.length / 16), Math.ceil(bytes / pageShare(client))) + 1 + extra;
}

/**
 * The rows of bench/results.md: per client and scenario, body delivery's model requests against
 * {@link drainTarget} and against metadata delivery (a row meets its target when both hold).
 */
export function drainBenchRows(rows: readonly DrainMetrics[]): string {
  const lines = ['| benchmark | ratio | target | meets | detail |', '| --- | --- | --- | --- | --- |'];
  for (const body of rows) {
    if (body.mode !== 'body') continue;
    const target = drainTarget(body.client, body.scenario);
    if (target === null) continue;
    const metadata = rows.find(
      (r) => r.mode === 'metadata' && r.client === body.client && r.scenario === body.scenario,
    );
    const meets = body.requests <= target && (metadata === undefined || body.requests <= metadata.requests);
    const bodies = bodiesFor(body.scenario);
    const bytes = bodies.reduce((n, b) => n + Buffer.byteLength(b), 0);
    const detail = [
      `body ${body.requests} requests, metadata ${metadata?.requests ?? 'not run'}, target ${target}`,
      `${bodies.length} messages, ${bytes} bytes, head ${headFit(body.client, body.scenario) === 'envelope' ? 'in the envelope' : `over the hook cap (${headFit(body.client, body.scenario) === 'page' ? 'within a page' : 'larger than a page'})`}`,
      `largest tool output ${body.maxToolOutputBytes} bytes`,
    ].join('; ');
    lines.push(
      `| drain: ${body.client}, ${body.scenario}: model requests vs target | ${(body.requests / target).toFixed(3)} | <= 1 | ${meets ? 'yes' : '**no**'} | ${detail} |`,
    );
  }
  return lines.join('\n');
}
