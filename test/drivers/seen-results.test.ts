// Driven turns count a tool result only when the client's own stream shows it (DESIGN.md I9):
// the stream readers pick out exactly the sluice results, and on both backends a result the client
// never showed (or showed altered) leaves its message pending after a successful turn.
import { afterEach, describe, expect, it } from 'vitest';
import { sendMessage } from '../../src/host/messages.js';
import type { Principal } from '../../src/host/principals.js';
import { beginTurn, endTurn, TurnSightings } from '../../src/host/turns/index.js';
import { ClaudeStreamResults, codexSluiceResults } from '../../src/surfaces/drivers/seen-results.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { connectInMemory, pendingIds, type ToolCaller } from '../mcp/support.js';

describe('reading what the client showed the model', () => {
  it('Claude: the tool_result texts of mcp__sluice__ calls, and nothing else', () => {
    const stream = new ClaudeStreamResults();
    const assistant = {
      type: 'assistant',
      message: {
        content: [
          { type: 'text', text: 'reading' },
          { type: 'tool_use', id: 'toolu_1', name: 'mcp__sluice__channel_read', input: {} },
          { type: 'tool_use', id: 'toolu_2', name: 'Bash', input: { command: 'echo {}' } },
          { type: 'tool_use', id: 'toolu_3', name: 'mcp__sluice__channel_search', input: {} },
          { type: 'tool_use', id: 'toolu_4', name: 'mcp__other__channel_read', input: {} },
        ],
      },
    };
    expect(stream.resultsIn(assistant)).toEqual([]);
    const user = {
      type: 'user',
      message: {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: [{ type: 'text', text: '{"messages":[]}' }],
          },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'bash output' },
          { type: 'tool_result', tool_use_id: 'toolu_3', content: 'a plain string result' },
          { type: 'tool_result', tool_use_id: 'toolu_4', content: [{ type: 'text', text: 'other server' }] },
        ],
      },
    };
    expect(stream.resultsIn(user)).toEqual(['{"messages":[]}', 'a plain string result']);
    const failed = {
      type: 'user',
      message: {
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: 'timed out' }],
      },
    };
    expect(stream.resultsIn(failed)).toEqual([]);
    // A result for a call the stream never announced (or garbage) confirms nothing.
    expect(
      stream.resultsIn({
        type: 'user',
        message: { content: [{ type: 'tool_result', tool_use_id: 'x', content: 'y' }] },
      }),
    ).toEqual([]);
    expect(stream.resultsIn(null)).toEqual([]);
    expect(stream.resultsIn({ type: 'result', subtype: 'success' })).toEqual([]);
  });

  it("Claude: a subagent's sluice reads (lines with a parent_tool_use_id) confirm nothing", () => {
    const stream = new ClaudeStreamResults();
    const call = { type: 'tool_use', id: 'toolu_sub', name: 'mcp__sluice__channel_read', input: {} };
    const result = { type: 'tool_result', tool_use_id: 'toolu_sub', content: [{ type: 'text', text: '{}' }] };
    const inTask = { parent_tool_use_id: 'toolu_task' };
    expect(stream.resultsIn({ type: 'assistant', ...inTask, message: { content: [call] } })).toEqual([]);
    expect(stream.resultsIn({ type: 'user', ...inTask, message: { content: [result] } })).toEqual([]);
    // The same call made by the main model (parent_tool_use_id null) counts.
    expect(
      stream.resultsIn({ type: 'assistant', parent_tool_use_id: null, message: { content: [call] } }),
    ).toEqual([]);
    expect(
      stream.resultsIn({ type: 'user', parent_tool_use_id: null, message: { content: [result] } }),
    ).toEqual(['{}']);
  });

  it('Codex: the text of completed sluice mcpToolCall items, and nothing else', () => {
    const item = (over: Record<string, unknown>) => ({
      item: {
        type: 'mcpToolCall',
        id: 'call_1',
        server: 'sluice',
        tool: 'channel_read',
        status: 'completed',
        result: { content: [{ type: 'text', text: '{"messages":[]}' }], structuredContent: null },
        ...over,
      },
      threadId: 't',
      turnId: 'u',
    });
    expect(codexSluiceResults('item/completed', item({}))).toEqual(['{"messages":[]}']);
    expect(codexSluiceResults('item/started', item({}))).toEqual([]);
    expect(codexSluiceResults('item/completed', item({ server: 'other' }))).toEqual([]);
    expect(codexSluiceResults('item/completed', item({ status: 'failed' }))).toEqual([]);
    expect(codexSluiceResults('item/completed', item({ type: 'commandExecution' }))).toEqual([]);
    expect(codexSluiceResults('item/completed', item({ result: null }))).toEqual([]);
    expect(codexSluiceResults('turn/completed', {})).toEqual([]);
  });
});

describe.each(backendsUnderTest())(
  'a driven (seen) turn counts only what the client showed (%s)',
  (backend) => {
    let h: ConformanceHost;
    let mcp: ToolCaller | undefined;
    afterEach(async () => {
      await mcp?.close();
      await h.close();
    });

    async function setup(): Promise<{ bot: Principal; ids: string[] }> {
      h = await openConformanceHost(backend, 'seen_results');
      const bot = await h.agent('bot', 'turn');
      const ids = [];
      for (const body of ['one', 'two'])
        ids.push((await sendMessage(h.ctx, h.owner, { to: 'bot', body })).message_id);
      mcp = await connectInMemory(h.ctx, bot);
      return { bot, ids };
    }

    it('a result written to the client but never shown in its stream stays pending after turn end ok', async () => {
      const { bot, ids } = await setup();
      const turn = await beginTurn(h.ctx, bot, { receipt: 'seen' });
      const page = await (mcp as ToolCaller).call('channel_read');
      expect(page.json.messages).toHaveLength(2);
      expect((await endTurn(h.ctx, bot, turn.id, { ok: true })).handled).toEqual([]);
      expect(await pendingIds(h.ctx, bot.id)).toEqual(ids);
      expect(await h.ctx.store.db.selectFrom('coverage_offers').selectAll().execute()).toEqual([]);
    });

    it('a result shown altered confirms nothing; the exact text confirms it, and the turn handles it', async () => {
      const { bot, ids } = await setup();
      const turn = await beginTurn(h.ctx, bot, { receipt: 'seen' });
      const page = await (mcp as ToolCaller).call('channel_read');
      const seen = new TurnSightings(h.ctx, bot, turn.id);
      for (const text of [`${page.text} `, page.text.slice(0, -1), 'unrelated'])
        seen.saw({ kind: 'tool_result', text });
      await seen.settled();
      expect(await h.ctx.store.db.selectFrom('coverage').selectAll().execute()).toEqual([]);
      seen.saw({ kind: 'tool_result', text: page.text });
      await seen.settled();
      expect((await endTurn(h.ctx, bot, turn.id, { ok: true })).handled).toEqual(ids);
      expect(await pendingIds(h.ctx, bot.id)).toEqual([]);
    });

    it('a result seen after its turn ended, or in another turn, counts for nothing', async () => {
      const { bot, ids } = await setup();
      const first = await beginTurn(h.ctx, bot, { receipt: 'seen' });
      const page = await (mcp as ToolCaller).call('channel_read');
      const second = await beginTurn(h.ctx, bot, { receipt: 'seen' });
      const late = new TurnSightings(h.ctx, bot, first.id);
      const elsewhere = new TurnSightings(h.ctx, bot, second.id);
      late.saw({ kind: 'tool_result', text: page.text });
      elsewhere.saw({ kind: 'tool_result', text: page.text });
      await Promise.all([late.settled(), elsewhere.settled()]);
      expect((await endTurn(h.ctx, bot, second.id, { ok: true })).handled).toEqual([]);
      expect(await pendingIds(h.ctx, bot.id)).toEqual(ids);
    });
  },
);
