import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import fc from 'fast-check';
import { createChannel } from '../src/host/channels/channels.js';
import type { HostContext } from '../src/host/identity/context.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../src/host/identity/principals.js';
import { editMessage } from '../src/host/messages/edit-message.js';
import { sendMessage } from '../src/host/messages/messages.js';
import { buildMcpServer } from '../src/surfaces/mcp/tools.js';
import type { FuzzFailure, FuzzReport } from './fuzz-cli.js';
import { hostileString, hostileValue } from './fuzz-rpc.js';
import { stateSnapshot } from './state-snapshot.js';

/** One agent's tools through the official MCP client (in-memory transport), with bugs collected. */
export interface McpSession {
  call(
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ text: string; isError: boolean; blocks: string[] }>;
  internalErrors: unknown[];
  close(): Promise<void>;
}

/** Connects the official MCP client to `buildMcpServer(ctx, agent)`. */
export async function connectMcp(ctx: HostContext, agent: Principal): Promise<McpSession> {
  const internalErrors: unknown[] = [];
  const server = buildMcpServer(ctx, agent, { onInternalError: (err) => internalErrors.push(err) });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'sluice-fuzz', version: '0.0.0' });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return {
    internalErrors,
    async call(name, args) {
      const r = (await client.callTool({ name, arguments: args })) as {
        content?: { type: string; text?: string }[];
        isError?: boolean;
      };
      const content = r.content ?? [];
      return {
        text: content.find((c) => c.type === 'text')?.text ?? '',
        isError: r.isError === true,
        blocks: content.map((c) => c.type),
      };
    },
    async close() {
      await client.close();
      await server.close();
    },
  };
}

const TOOLS = [
  'channel_read',
  'channel_search',
  'channel_read_image',
  'message_send',
  'message_reply',
  'message_archive',
  'inbox_status',
];

const ARG_NAMES = [
  'channel_id',
  'unread',
  'cursor',
  'limit',
  'message_id',
  'content_cursor',
  'query',
  'attachment_id',
  'to',
  'body',
  'subject',
  'reply_to',
  'archive',
  'message_ids',
  '__proto__',
  'constructor',
  'x'.repeat(200),
];

/** Strings aimed at full-text search syntax as well as at parsers. */
const searchString = fc.oneof(
  hostileString,
  fc.constantFrom('"', '""', 'NEAR(a b)', '*', 'a OR b', 'AND', '-x', '^', 'col:val', '(', '\u0000*'),
);

/** Each tool's real arguments, so targeted calls get past the strict schema into the host. */
const TOOL_ARGS: Record<string, string[]> = {
  channel_read: ['channel_id', 'unread', 'limit', 'message_id'],
  channel_search: ['query', 'channel_id', 'limit'],
  channel_read_image: ['attachment_id'],
  message_send: ['to', 'body', 'subject', 'reply_to'],
  message_reply: ['message_id', 'body', 'subject', 'archive'],
  message_archive: ['message_ids'],
  inbox_status: [],
};

/** A plausible value for each argument: real names and ids of the seeded host. */
function plausibleArg(name: string, ids: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  switch (name) {
    case 'channel_id':
    case 'message_id':
    case 'reply_to':
    case 'attachment_id':
      return ids;
    case 'message_ids':
      return fc.array(ids, { minLength: 1, maxLength: 3 });
    case 'unread':
    case 'archive':
      return fc.boolean();
    case 'limit':
      return fc.integer({ min: 1, max: 100 });
    case 'to':
      return fc.constantFrom('alice', 'eve', 'bot', 'owner', '#room', '#private', 'nobody');
    case 'query':
      return searchString;
    default:
      return hostileString;
  }
}

/** A call with the tool's own arguments, each usually plausible and sometimes hostile. */
function targetedCall(ids: fc.Arbitrary<string>) {
  return fc.constantFrom(...Object.keys(TOOL_ARGS)).chain((name) => {
    const entries = (TOOL_ARGS[name] as string[]).map((arg) =>
      fc.oneof(
        { weight: 6, arbitrary: plausibleArg(arg, ids).map((v) => [arg, v] as const) },
        { weight: 1, arbitrary: hostileValue.map((v) => [arg, v] as const) },
        { weight: 2, arbitrary: fc.constant(undefined) },
      ),
    );
    return fc.tuple(...entries).map((pairs) => ({
      kind: 'targeted',
      name,
      args: Object.fromEntries(pairs.filter((p) => p !== undefined)) as Record<string, unknown>,
      expectCode: undefined as string | undefined,
    }));
  });
}

/** Cursors the campaign tampers with, taken from real reads by `bot` and `eve`. */
interface CursorKit {
  /** bot's history cursor of #room (limit 1). */
  history: string;
  /** bot's unread cursor (limit 1). */
  unread: string;
  /** bot's search cursor for "word" (limit 1). */
  search: string;
  /** bot's content cursor for the big message. */
  content: string;
  /** eve's history cursor of #room and content cursor of the big message. */
  eveHistory: string;
  eveContent: string;
  /** bot's content cursor of a message edited since. */
  expiredContent: string;
}

interface Seed {
  roomId: string;
  bigId: string;
  editedId: string;
  smallId: string;
  cursors: CursorKit;
}

/** What a tampered cursor is fed to: the call shape it claims to continue. */
type CursorUse = 'history' | 'unread' | 'search' | 'content';

function flipBit(token: string, bit: number): string {
  const bytes = Buffer.from(token, 'base64url');
  const i = bit % (bytes.length * 8);
  bytes[i >> 3] = (bytes[i >> 3] as number) ^ (1 << (i & 7));
  return bytes.toString('base64url');
}

/** A tampered, truncated, oversized, foreign or expired cursor, and the call it is used in. */
const cursorAttack = fc.oneof(
  fc
    .tuple(fc.constantFrom<CursorUse>('history', 'unread', 'search', 'content'), fc.nat())
    .map(([use, bit]) => ({ use, how: `flip bit ${bit}`, make: (k: CursorKit) => flipBit(k[use], bit) })),
  fc
    .tuple(fc.constantFrom<CursorUse>('history', 'unread', 'search', 'content'), fc.nat())
    .map(([use, n]) => ({
      use,
      how: `truncate at ${n}`,
      // At least one character: an empty cursor is an argument error, not a cursor.
      make: (k: CursorKit) => k[use].slice(0, 1 + (n % (k[use].length - 1))),
    })),
  fc
    .tuple(fc.constantFrom<CursorUse>('history', 'unread', 'search', 'content'), hostileString)
    .map(([use, extra]) => ({ use, how: 'append', make: (k: CursorKit) => k[use] + (extra || 'A') })),
  fc
    .tuple(fc.constantFrom<CursorUse>('history', 'unread', 'search', 'content'), fc.nat({ max: 4096 }))
    .map(([use, n]) => ({
      use,
      how: `16 KiB + ${n}`,
      make: (k: CursorKit) => k[use].padEnd(16_385 + n, 'A'),
    })),
  fc.constantFrom(
    { use: 'history' as CursorUse, how: "eve's history cursor", make: (k: CursorKit) => k.eveHistory },
    { use: 'content' as CursorUse, how: "eve's content cursor", make: (k: CursorKit) => k.eveContent },
    { use: 'history' as CursorUse, how: 'unread cursor as history', make: (k: CursorKit) => k.unread },
    { use: 'unread' as CursorUse, how: 'history cursor as unread', make: (k: CursorKit) => k.history },
    { use: 'search' as CursorUse, how: 'history cursor as search', make: (k: CursorKit) => k.history },
    { use: 'history' as CursorUse, how: 'search cursor as history', make: (k: CursorKit) => k.search },
    { use: 'history' as CursorUse, how: 'content cursor as page cursor', make: (k: CursorKit) => k.content },
    { use: 'content' as CursorUse, how: 'page cursor as content cursor', make: (k: CursorKit) => k.history },
    { use: 'content' as CursorUse, how: 'expired content cursor', make: (k: CursorKit) => k.expiredContent },
  ),
);

function callFor(use: CursorUse, cursor: string, seed: Seed): [string, Record<string, unknown>] {
  switch (use) {
    case 'history':
      return ['channel_read', { channel_id: seed.roomId, limit: 1, cursor }];
    case 'unread':
      return ['channel_read', { limit: 1, cursor }];
    case 'search':
      return ['channel_search', { query: 'word', limit: 1, cursor }];
    case 'content':
      return ['channel_read', { message_id: seed.bigId, content_cursor: cursor }];
  }
}

async function seedHost(ctx: HostContext): Promise<{ bot: Principal; eve: Principal; seed: Seed }> {
  const alice = await addPrincipal(ctx, { name: 'alice', kind: 'person' });
  // alice manages both agents: only an agent's managers add it to a group.
  const bot = await addPrincipal(ctx, { name: 'bot', kind: 'agent', managerId: alice.id });
  const eve = await addPrincipal(ctx, { name: 'eve', kind: 'agent', managerId: alice.id });
  const roomId = (await createChannel(ctx, alice, { name: 'room', members: ['bot', 'eve'] })).id;
  await createChannel(ctx, alice, { name: 'private', members: ['eve'] });
  let smallId = '';
  for (let i = 0; i < 4; i++) {
    smallId = (await sendMessage(ctx, alice, { to: roomId, body: `word ${i} 😀 ${'z'.repeat(3_000)}` }))
      .message_id;
  }
  const bigId = (await sendMessage(ctx, alice, { to: roomId, body: 'word '.repeat(10_000) })).message_id;
  const editedId = (await sendMessage(ctx, alice, { to: roomId, body: 'e'.repeat(40_000) })).message_id;
  return { bot, eve, seed: { roomId, bigId, editedId, smallId, cursors: {} as CursorKit } };
}

async function cursorOf(session: McpSession, name: string, args: Record<string, unknown>, key: string) {
  const r = await session.call(name, args);
  const value = JSON.parse(r.text)[key];
  if (typeof value !== 'string')
    throw new Error(`no ${key} from ${name} ${JSON.stringify(args)}: ${r.text.slice(0, 200)}`);
  return value;
}

/** Problems with an error result: exactly `{"error":{"code","message"}}`, within the budget. */
export function mcpErrorProblems(text: string, budget: number): string[] {
  const problems: string[] = [];
  if (text.length > budget) problems.push(`error is ${text.length} units, over ${budget}`);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return [...problems, `error is not JSON: ${text.slice(0, 120)}`];
  }
  const e = (v as { error?: Record<string, unknown> })?.error;
  const keys = v && typeof v === 'object' ? Object.keys(v) : [];
  if (keys.length !== 1 || !e || typeof e.code !== 'string' || typeof e.message !== 'string')
    problems.push(`error is not {"error":{"code","message"}}: ${text.slice(0, 120)}`);
  else if (e.code === 'internal') problems.push(`internal error: ${String(e.message).slice(0, 200)}`);
  if (/\n\s+at /.test(text)) problems.push('stack trace in a tool result');
  return problems;
}

/**
 * MCP tool arguments through the official client: wrong types, unknown names, hostile strings and
 * tampered/foreign/expired cursors get `isError` with `{"error":{"code","message"}}` within the
 * budget, never an internal error, and change nothing. Tampered cursors are refused with
 * `invalid_cursor`.
 */
export async function fuzzMcp(runs: number, seed: number): Promise<FuzzReport> {
  const home = mkdtempSync(join(tmpdir(), 'sluice-fuzz-mcp-'));
  const ctx = await openHost({ home, durability: 'normal' });
  await initHome(ctx);
  const { bot, eve, seed: s } = await seedHost(ctx);
  const botMcp = await connectMcp(ctx, bot);
  const eveMcp = await connectMcp(ctx, eve);
  const budget = ctx.limits.toolOutputUnits;
  const failures: FuzzFailure[] = [];
  let inputs = 0;
  try {
    const expiredContent = await cursorOf(
      botMcp,
      'channel_read',
      { message_id: s.editedId },
      'contentCursor',
    );
    const alice = await resolvePrincipal(ctx, 'alice');
    await editMessage(ctx, alice, s.editedId, { body: 'f'.repeat(40_000) });
    s.cursors = {
      history: await cursorOf(botMcp, 'channel_read', { channel_id: s.roomId, limit: 1 }, 'nextCursor'),
      unread: await cursorOf(botMcp, 'channel_read', { limit: 1 }, 'nextCursor'),
      search: await cursorOf(botMcp, 'channel_search', { query: 'word', limit: 1 }, 'nextCursor'),
      content: await cursorOf(botMcp, 'channel_read', { message_id: s.bigId }, 'contentCursor'),
      eveHistory: await cursorOf(eveMcp, 'channel_read', { channel_id: s.roomId, limit: 1 }, 'nextCursor'),
      eveContent: await cursorOf(eveMcp, 'channel_read', { message_id: s.bigId }, 'contentCursor'),
      expiredContent,
    };
    const ids = fc.constantFrom(s.roomId, s.bigId, s.smallId, s.editedId, 'a_nope', 'm_nope');
    const argValue = fc.oneof(hostileValue, searchString, ids);
    const randomCall = fc
      .tuple(
        fc.oneof(fc.constantFrom(...TOOLS), fc.constantFrom('', 'nope', 'channel_read '), hostileString),
        fc.dictionary(fc.oneof(fc.constantFrom(...ARG_NAMES), fc.string({ maxLength: 20 })), argValue, {
          maxKeys: 4,
        }),
      )
      .map(([name, args]) => ({
        kind: 'arguments',
        name,
        args,
        expectCode: undefined as string | undefined,
      }));
    const attack = cursorAttack.map((a) => {
      const [name, args] = callFor(a.use, a.make(s.cursors), s);
      return { kind: `cursor ${a.how}`, name, args, expectCode: 'invalid_cursor' as string | undefined };
    });
    await fc.assert(
      fc.asyncProperty(fc.oneof(randomCall, targetedCall(ids), targetedCall(ids), attack), async (input) => {
        inputs++;
        const label = `${input.kind}: ${input.name} ${JSON.stringify(input.args).slice(0, 240)}`;
        const before = await stateSnapshot(ctx);
        const errorsBefore = botMcp.internalErrors.length;
        let r: { text: string; isError: boolean };
        try {
          r = await botMcp.call(input.name, input.args);
        } catch (err) {
          failures.push({
            input: label,
            problem: `the client call threw: ${(err as Error).message.slice(0, 200)}`,
          });
          return;
        }
        if (botMcp.internalErrors.length > errorsBefore)
          failures.push({
            input: label,
            problem: `internal error: ${String(botMcp.internalErrors.at(-1)).slice(0, 200)}`,
          });
        if (r.text.length > budget)
          failures.push({ input: label, problem: `result is ${r.text.length} units` });
        if (input.expectCode !== undefined) {
          const code = r.isError
            ? (JSON.parse(r.text) as { error?: { code?: string } }).error?.code
            : 'success';
          if (code !== input.expectCode)
            failures.push({ input: label, problem: `answered ${code}, not ${input.expectCode}` });
        }
        if (r.isError) {
          for (const problem of mcpErrorProblems(r.text, budget)) failures.push({ input: label, problem });
          if ((await stateSnapshot(ctx)) !== before)
            failures.push({ input: label, problem: 'state changed on a rejected input' });
        }
      }),
      { numRuns: runs, seed },
    );
  } finally {
    await botMcp.close();
    await eveMcp.close();
    await ctx.store.close();
    rmSync(home, { recursive: true, force: true });
  }
  return { surface: 'mcp tools', inputs, failures };
}
