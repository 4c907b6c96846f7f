import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { sql } from 'kysely';
import { expect, vi } from 'vitest';
import { createHostContext, type HostContext } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { ConfirmingTransport, ReceiptLedger } from '../../src/surfaces/mcp/receipts.js';
import { buildMcpServer, type McpServerOptions } from '../../src/surfaces/mcp/tools.js';

/** What a tool call returned, reduced to what the model sees. */
export interface ToolText {
  text: string;
  isError: boolean;
  /** Number of content blocks of each type. */
  blocks: string[];
  // biome-ignore lint/suspicious/noExplicitAny: tests assert on the fields of every result shape.
  json: any;
}

/** Ids of the messages a page returned, in order. */
export function messageIds(page: ToolText): string[] {
  return (page.json.messages ?? []).map((m: { message_id: string }) => m.message_id);
}

/** Anything that can call a tool: an in-memory or a stdio MCP client. */
export interface ToolCaller {
  call(name: string, args?: Record<string, unknown>): Promise<ToolText>;
  client: Client;
  close(): Promise<void>;
}

/** Reduces an MCP result to its one text block (and checks there is exactly one). */
export function toolText(result: unknown): ToolText {
  const r = result as {
    content?: { type: string; text?: string }[];
    isError?: boolean;
    structuredContent?: unknown;
  };
  const content = r.content ?? [];
  const texts = content.filter((c) => c.type === 'text');
  expect(texts).toHaveLength(1);
  expect(r.structuredContent).toBeUndefined();
  const text = texts[0]!.text as string;
  return {
    text,
    isError: r.isError === true,
    blocks: content.map((c) => c.type),
    json: JSON.parse(text),
  };
}

/** Wraps a connected client. */
export function callerFor(client: Client, close: () => Promise<void>): ToolCaller {
  return {
    client,
    close,
    async call(name, args = {}) {
      return toolText(await client.callTool({ name, arguments: args }));
    },
  };
}

/**
 * The agent's tools through the official client over the SDK's in-memory transport pair. A reply
 * counts as received once the in-memory send handed it to the client (as stdio does once stdout
 * took it).
 */
export async function connectInMemory(
  ctx: HostContext,
  agent: Principal,
  options: Omit<McpServerOptions, 'receipts'> & { receipts?: ReceiptLedger } = {},
): Promise<ToolCaller> {
  const receipts = options.receipts ?? new ReceiptLedger(ctx);
  const server = buildMcpServer(ctx, agent, {
    onInternalError: (err) => {
      throw err;
    },
    ...options,
    receipts,
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'sluice-test', version: '0.0.0' });
  await Promise.all([
    server.connect(new ConfirmingTransport(serverSide, receipts)),
    client.connect(clientSide),
  ]);
  return callerFor(client, async () => {
    await client.close();
    await server.close();
  });
}

/** A second context on the same store with another tool budget (same cursor secret). */
export async function withBudget(ctx: HostContext, toolOutputUnits: number): Promise<HostContext> {
  return createHostContext({ store: ctx.store, home: ctx.home, limits: { toolOutputUnits } });
}

/** Pending message ids of an agent, FIFO, straight from the inbox rows. */
export async function pendingIds(ctx: HostContext, agentId: string): Promise<string[]> {
  const rows = await ctx.store.db
    .selectFrom('inbox')
    .select('message_id')
    .where('agent_id', '=', agentId)
    .where('state', 'in', ['waiting', 'returned'])
    .orderBy('position')
    .execute();
  return rows.map((r) => r.message_id);
}

/**
 * Gives a message a hostile id (10 KB, NUL, lone surrogates) that the host would never generate,
 * so reads are tested against ids of any shape. Rewrites every reference in one statement each.
 */
export async function renameMessage(ctx: HostContext, from: string, to: string): Promise<void> {
  await ctx.store.transaction(async (trx) => {
    await sql`update messages set id = ${to} where id = ${from}`.execute(trx);
    await sql`update inbox set message_id = ${to} where message_id = ${from}`.execute(trx);
  });
}

/** Walks `channel_read` pages from `args` until nextCursor is null; returns every page. */
export async function walkPages(
  caller: ToolCaller,
  args: Record<string, unknown>,
  maxPages = 10_000,
): Promise<ToolText[]> {
  const pages: ToolText[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const page = await caller.call('channel_read', cursor === undefined ? args : { ...args, cursor });
    pages.push(page);
    if (page.isError) return pages;
    cursor = page.json.nextCursor ?? undefined;
    if (cursor === undefined) return pages;
  }
  throw new Error('page walk did not end');
}

/** Reads a message whole through its fragments; returns the fragment texts joined and every result. */
export async function readAllFragments(
  caller: ToolCaller,
  messageId: string,
): Promise<{ joined: string; results: ToolText[] }> {
  const results: ToolText[] = [];
  let next: string | null = null;
  let joined = '';
  do {
    const r: ToolText = await caller.call(
      'channel_read',
      next === null ? { message_id: messageId } : { message_id: messageId, content_cursor: next },
    );
    results.push(r);
    if (r.isError) throw new Error(`fragment read failed: ${r.text.slice(0, 300)}`);
    if (r.json.messages) {
      // Whole: the projection as stored, without the reader's `sender` beside its author.
      const { sender: _sender, ...projection } = r.json.messages[0];
      return { joined: JSON.stringify(projection), results };
    }
    joined += r.json.fragment;
    next = r.json.contentCursor;
  } while (next !== null);
  return { joined, results };
}

/**
 * Waits until a turn's coverage holds `count` messages: a reply read in another process (stdio,
 * HTTP) is confirmed there once its write completed, a moment after the client already has it.
 */
export async function receiptCommitted(ctx: HostContext, turnId: string, count: number): Promise<void> {
  await vi.waitFor(
    async () => {
      const rows = await ctx.store.db
        .selectFrom('coverage')
        .select('message_seq')
        .where('turn_id', '=', turnId)
        .execute();
      expect(rows.length).toBeGreaterThanOrEqual(count);
    },
    { timeout: 10_000, interval: 10 },
  );
}
