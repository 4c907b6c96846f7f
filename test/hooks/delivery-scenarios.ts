// Shared pieces of the delivery evals with the real clients: a seeded Sluice home, sends, the
// store's view afterwards, the envelopes a model request carried, and a scripted agent that
// replies to and archives what it is given (the drain eval is test/e2e/support/drain-eval.ts).
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { addPrincipal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { listInbox } from '../../src/host/queue/inbox.js';
import {
  findTool,
  isMainAgentRequest,
  type RecordedRequest,
  type Reply,
  shellCall,
  toolResults,
  userContent,
} from '../e2e/support/model-server.js';
import { SLUICE_BIN } from '../support/host.js';

export type Client = 'claude' | 'codex';
export type Mode = 'body' | 'metadata';
export const AGENT = 'bot';
const SENDER = 'alice';

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

// --- the scripted model -----------------------------------------------------------------------

const ENVELOPE_LINE = /^\{"schema":"sluice\.delivery\.v1".*$/gm;

/** The parts of a `sluice.delivery.v1` envelope the scenarios look at. */
export interface Envelope {
  totalPending: number;
  included: number;
  overflow: number;
  oversizedHead: { id: string; read: string; list?: string } | null;
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

/**
 * The client's shell tool call running `command` as the scripted agent. Codex runs exec_command in
 * a login shell by default, and /etc/profile resets PATH (and with it the temp bin dir holding
 * `sluice`); a non-login shell keeps the session's environment. It also hands back a session id
 * instead of the output after yield_time_ms (default 10 s); twenty `sluice` processes on a loaded
 * 2-core machine take longer than that.
 */
export function agentShellCall(req: RecordedRequest, command: string): ReturnType<typeof shellCall> {
  const tool = shellCall(req, command);
  if (tool.name === 'exec_command')
    tool.input = { ...(tool.input as object), login: false, yield_time_ms: 30_000 };
  return tool;
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
      return { toolCalls: [agentShellCall(req, command)] };
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
