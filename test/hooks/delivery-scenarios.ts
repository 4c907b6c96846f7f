// Scenarios for the body-vs-metadata comparison with the real clients: seeds a Sluice home,
// installs the hooks with `sluice hooks install` into the client's temp config, runs turns until
// the inbox is empty, and scripts the model as an agent that follows what it is given.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initHome, openHost } from '../../src/host/home.js';
import { listInbox } from '../../src/host/inbox.js';
import { sendMessage } from '../../src/host/messages.js';
import { addPrincipal, resolvePrincipal } from '../../src/host/principals.js';
import {
  findTool,
  isMainAgentRequest,
  type ModelServer,
  type RecordedRequest,
  type Reply,
  shellCall,
  toolResults,
  userContent,
} from '../e2e/support/model-server.js';
import { makeClaudeHome, runClaude } from '../e2e/support/run-claude.js';
import { makeCodexHome, runCodex } from '../e2e/support/run-codex.js';
import { SLUICE_BIN } from '../support/host.js';

export type Client = 'claude' | 'codex';
export type Mode = 'body' | 'metadata';
export type ScenarioName = 'cold backlog of 2' | 'burst of 20' | 'oversized head' | 'arrival after the slice';
export const SCENARIOS: readonly ScenarioName[] = [
  'cold backlog of 2',
  'burst of 20',
  'oversized head',
  'arrival after the slice',
];

export const AGENT = 'bot';
const SENDER = 'alice';

/** What one scenario cost with one client and one delivery mode. */
export interface ScenarioMetrics {
  client: Client;
  mode: Mode;
  scenario: ScenarioName;
  turns: number;
  /** Main-agent model requests over all turns. */
  requests: number;
  /** Tool calls the scripted model made. */
  toolCalls: number;
  /** Bytes of all model request bodies. */
  requestBytes: number;
  /** Wall time of the client runs (sum over turns). */
  wallMs: number;
  /** In turn 1: the model request (1-based) that answered with the first reply. */
  firstReplyAt: number | null;
}

/** Evidence for the assertions: what the model saw and what the store holds afterwards. */
export interface ScenarioTrace extends ScenarioMetrics {
  /** Per turn, the envelope JSON lines found in the turn's first request. */
  firstRequestEnvelopes: Envelope[][];
  /** Per turn, whether the first request carried the metadata notice. */
  firstRequestNotice: boolean[];
  /** Per turn, the shell commands the model ran. */
  commands: string[][];
  sent: Map<string, string>;
  /** The message sent while turn 1 was in flight (arrival scenario). */
  lateId: string | null;
  /** After each turn: the agent's pending ids. */
  pendingAfter: string[][];
  archivedIds: string[];
  replyBodies: string[];
  exitCodes: (number | null)[];
  /** Per turn, the text of the last tool result the model saw (for failure messages). */
  lastToolOutputs: string[];
}

function bodyFor(scenario: ScenarioName, i: number): string {
  if (scenario === 'oversized head' && i === 0) {
    const unit = 'Line of a long report — 長い報告 🚢 with "quotes" and \\backslashes\\.\n';
    return `OVERSIZED-HEAD ${unit.repeat(Math.ceil(20_000 / unit.length))}END`;
  }
  return `Message ${i + 1} for ${AGENT}: please confirm item #${i + 1} (ünïcode ✓, "quoted", <tag>).`;
}

function countFor(scenario: ScenarioName): number {
  if (scenario === 'burst of 20') return 20;
  if (scenario === 'arrival after the slice') return 1;
  return 2;
}

export interface Home {
  home: string;
  binDir: string;
}

export async function seedHome(): Promise<Home> {
  const root = mkdtempSync(join(tmpdir(), 'sluice-delivery-e2e-'));
  const home = join(root, 'sluice');
  const binDir = join(root, 'bin');
  mkdirSync(binDir);
  // The model's shell finds `sluice` on PATH, as it would after `npm i -g`.
  writeFileSync(join(binDir, 'sluice'), `#!/bin/sh\nexec '${process.execPath}' '${SLUICE_BIN}' "$@"\n`);
  chmodSync(join(binDir, 'sluice'), 0o755);
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    await initHome(ctx);
    await addPrincipal(ctx, { name: AGENT, kind: 'agent', settlement: 'explicit' });
    await addPrincipal(ctx, { name: SENDER, kind: 'person' });
  } finally {
    await ctx.store.close();
  }
  return { home, binDir };
}

export async function send(home: string, bodies: readonly string[]): Promise<string[]> {
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    const alice = await resolvePrincipal(ctx, SENDER);
    const ids: string[] = [];
    for (const body of bodies) ids.push((await sendMessage(ctx, alice, { to: AGENT, body })).message_id);
    return ids;
  } finally {
    await ctx.store.close();
  }
}

/** Sends one message from a child process (the model server's script cannot await the store). */
function sendFromCli(home: string, body: string): string {
  return execFileSync(process.execPath, [SLUICE_BIN, 'message', 'send', AGENT, '-m', body], {
    env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: SENDER },
    encoding: 'utf8',
  }).trim();
}

export async function inboxState(home: string): Promise<{ pending: string[]; archived: string[] }> {
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    const agent = await resolvePrincipal(ctx, AGENT);
    const pending = (await listInbox(ctx, agent, { limit: 1000 })).map((l) => l.projection.message_id);
    const archived = (await listInbox(ctx, agent, { limit: 1000, archive: true })).map(
      (l) => l.projection.message_id,
    );
    return { pending, archived };
  } finally {
    await ctx.store.close();
  }
}

export async function repliesFromAgent(home: string): Promise<string[]> {
  const ctx = await openHost({ home, durability: 'normal' });
  try {
    const rows = await ctx.store.db
      .selectFrom('messages')
      .innerJoin('principals', 'principals.id', 'messages.author_id')
      .select(['messages.body'])
      .where('principals.name', '=', AGENT)
      .execute();
    return rows.map((r) => r.body);
  } finally {
    await ctx.store.close();
  }
}

function installHooks(
  client: Client,
  mode: Mode,
  home: string,
  target: { project?: string; codexHome?: string },
) {
  const args = [SLUICE_BIN, 'hooks', 'install', client, '--as', AGENT];
  if (target.project) args.push('--project', target.project);
  if (mode === 'metadata') args.push('--metadata');
  return execFileSync(process.execPath, args, {
    env: { ...process.env, SLUICE_HOME: home, ...(target.codexHome ? { CODEX_HOME: target.codexHome } : {}) },
    encoding: 'utf8',
  });
}

// --- the scripted model -----------------------------------------------------------------------

const ENVELOPE_LINE = /^\{"schema":"sluice\.delivery\.v1".*$/gm;

/** The parts of a `sluice.delivery.v1` envelope the scenarios look at. */
export interface Envelope {
  totalPending: number;
  included: number;
  overflow: number;
  oversizedHead: { id: string; read: string } | null;
  messages: { id: string; body: string }[];
}

/** Every delivery envelope JSON line in the request's context texts. */
export function envelopesIn(req: RecordedRequest): Envelope[] {
  const found: Envelope[] = [];
  for (const text of userContent(req).texts) {
    for (const line of text.match(ENVELOPE_LINE) ?? []) found.push(JSON.parse(line) as Envelope);
  }
  return found;
}

function hasNotice(req: RecordedRequest): boolean {
  return userContent(req).texts.some((t) => /\[sluice\] \d+ pending message\(s\) for /.test(t));
}

/** The JSON a shell command printed, out of the client's tool result framing. */
function toolJson(text: string): unknown {
  const start = text.search(/^[[{]/m);
  if (start < 0) return undefined;
  try {
    return JSON.parse(text.slice(start).trim());
  } catch {
    return undefined;
  }
}

function replyAndArchive(ids: readonly string[]): string {
  const replies = ids.map((id) => `sluice message reply ${id} -m 'Done: handled ${id}'`);
  return [...replies, `sluice message archive ${ids.join(' ')}`].join(' && ');
}

export interface TurnLog {
  commands: string[];
  /** Codex `write_stdin` polls for a command still running after its yield time. */
  polls: number;
  /** 1-based number of the main request whose answer first replied to a message. */
  firstReplyAt: number | null;
}

/**
 * An agent that acts on what it is given: complete bodies → reply and archive exactly those ids
 * in one command; an oversized head → read it, then reply and archive it; a metadata notice →
 * list bodies first, then reply and archive them. `onFirstRequest` runs when a turn's first
 * request arrives (before the model answers).
 */
export function agentScript(log: TurnLog, onFirstRequest: () => void) {
  let seenFirst = false;
  return (req: RecordedRequest, ctx: { mainIndex: number }): Reply => {
    if (!isMainAgentRequest(req)) return { text: 'ok' };
    if (!seenFirst) {
      seenFirst = true;
      onFirstRequest();
    }
    const call = (command: string): Reply => {
      log.commands.push(command);
      if (log.firstReplyAt === null && command.includes('sluice message reply'))
        log.firstReplyAt = ctx.mainIndex + 1;
      const tool = shellCall(req, command);
      // Codex runs exec_command in a login shell by default, and /etc/profile resets PATH (and with
      // it the temp bin dir holding `sluice`); a non-login shell keeps the session's environment.
      // It also hands back a session id instead of the output after yield_time_ms (default 10 s);
      // twenty `sluice message reply` processes on a loaded 2-core machine take longer than that.
      if (tool.name === 'exec_command')
        tool.input = { ...(tool.input as object), login: false, yield_time_ms: 30_000 };
      return { toolCalls: [tool] };
    };
    const results = toolResults(req);
    if (results.length === 0) {
      const envelope = envelopesIn(req).at(-1);
      if (envelope !== undefined && envelope.messages.length > 0)
        return call(replyAndArchive(envelope.messages.map((m) => m.id)));
      if (envelope?.oversizedHead) return call(`sluice message read ${envelope.oversizedHead.id} --json`);
      if (hasNotice(req)) return call('sluice message ls --json --include-body');
      return { text: 'Nothing in the inbox.' };
    }
    if (ctx.mainIndex > 8) return { text: 'giving up' };
    const lastText = results.at(-1)?.text ?? '';
    // Codex hands back a session id when a command outlives its yield time; wait for it to end.
    const running = /Process running with session ID (\d+)/.exec(lastText);
    if (running && findTool(req, 'write_stdin')) {
      log.polls++;
      const input = { session_id: Number(running[1]), chars: '', yield_time_ms: 30_000 };
      return { toolCalls: [{ name: 'write_stdin', input }] };
    }
    const last = toolJson(lastText);
    // `message ls --json --include-body` prints a bounded page {messages, next}; a bare array is
    // the metadata listing.
    const page = Array.isArray(last) ? last : (last as { messages?: unknown } | undefined)?.messages;
    if (Array.isArray(page) && page.length > 0)
      return call(replyAndArchive(page.map((row: { id: string }) => row.id)));
    const read = last as { id?: unknown; body?: unknown } | undefined;
    if (read && typeof read === 'object' && typeof read.id === 'string' && typeof read.body === 'string') {
      return call(replyAndArchive([read.id]));
    }
    return { text: 'Replied and archived.' };
  };
}

// --- running a scenario ------------------------------------------------------------------------

/** Runs one scenario with one client and mode, turn after turn until the inbox is empty. */
export async function runScenario(
  server: ModelServer,
  client: Client,
  mode: Mode,
  scenario: ScenarioName,
  maxTurns = 4,
): Promise<ScenarioTrace> {
  const { home, binDir } = await seedHome();
  const bodies = Array.from({ length: countFor(scenario) }, (_, i) => bodyFor(scenario, i));
  const ids = await send(home, bodies);
  const sent = new Map(ids.map((id, i) => [id, bodies[i] as string]));
  const claudeHome = client === 'claude' ? makeClaudeHome('sluice-delivery-claude-') : undefined;
  const codexHome = client === 'codex' ? makeCodexHome({ server }, 'sluice-delivery-codex-') : undefined;
  if (claudeHome) installHooks('claude', mode, home, { project: claudeHome.cwd });
  if (codexHome) installHooks('codex', mode, home, { codexHome: codexHome.codexHome });
  const env = { PATH: `${binDir}:${process.env.PATH}`, SLUICE_HOME: home, SLUICE_AS: AGENT };

  const trace: ScenarioTrace = {
    client,
    mode,
    scenario,
    turns: 0,
    requests: 0,
    toolCalls: 0,
    requestBytes: 0,
    wallMs: 0,
    firstReplyAt: null,
    firstRequestEnvelopes: [],
    firstRequestNotice: [],
    commands: [],
    sent,
    lateId: null,
    pendingAfter: [],
    archivedIds: [],
    replyBodies: [],
    exitCodes: [],
    lastToolOutputs: [],
  };
  for (let turn = 0; turn < maxTurns; turn++) {
    if ((await inboxState(home)).pending.length === 0) break;
    const log: TurnLog = { commands: [], polls: 0, firstReplyAt: null };
    server.reset(
      agentScript(log, () => {
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
        ? await runClaude({ server, prompt, home: claudeHome, env, timeoutMs: 120_000 })
        : await runCodex({ server, prompt, home: codexHome, env, timeoutMs: 120_000 });
    const main = server.mainCalls();
    const first = main[0];
    trace.turns++;
    trace.exitCodes.push(run.code);
    trace.requests += main.length;
    trace.requestBytes += server.modelCalls().reduce((n, r) => n + r.bytes, 0);
    trace.wallMs += run.durationMs;
    trace.toolCalls += log.commands.length + log.polls;
    trace.commands.push(log.commands);
    if (turn === 0) trace.firstReplyAt = log.firstReplyAt;
    const last = main.at(-1);
    trace.lastToolOutputs.push(last ? (toolResults(last).at(-1)?.text ?? '').slice(0, 2000) : '');
    trace.firstRequestEnvelopes.push(first ? envelopesIn(first) : []);
    trace.firstRequestNotice.push(first ? hasNotice(first) : false);
    trace.pendingAfter.push((await inboxState(home)).pending);
    if (server.scriptErrors.length > 0) throw server.scriptErrors[0];
  }
  trace.archivedIds = (await inboxState(home)).archived;
  trace.replyBodies = await repliesFromAgent(home);
  return trace;
}

/** The comparison table for docs/delivery.md, padded the way the repository's formatter lays it out. */
export function metricsTable(rows: readonly ScenarioMetrics[]): string {
  const header = [
    'client',
    'scenario',
    'delivery',
    'first reply in request #',
    'turns',
    'model requests',
    'tool calls',
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
