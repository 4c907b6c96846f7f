// Self-check of the e2e client infrastructure: runs the REAL Claude Code and Codex binaries
// against the scripted model server. Not part of the default suite (it installs ~500 MB of
// clients on first use); run it with:
//   SLUICE_E2E=1 npx vitest run test/e2e/support/selfcheck.e2e.test.ts
// Findings (shapes, sizes, timings) are written to test-artifacts/e2e-clients/findings.json.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ensureClients, REPO_ROOT } from './clients.js';
import {
  findText,
  findTool,
  isMainAgentRequest,
  lastToolResultText,
  type ModelServer,
  shellCall,
  startModelServer,
  toolResults,
  userContent,
} from './model-server.js';
import { runClaude, startClaudeSession } from './run-claude.js';
import { makeCodexHome, runCodex, startCodexAppServer, trustCodexHooks } from './run-codex.js';

const FIX = join(import.meta.dirname, 'fixtures');
const MCP_SERVER = join(FIX, 'echo-mcp-server.mjs');
const HOOK = `${process.execPath} ${join(FIX, 'hook-context.mjs')}`;
const PNG = join(FIX, 'red-8x8.png');
const enabled = process.env.SLUICE_E2E === '1';

const findings: Record<string, unknown> = {};
const record = (k: string, v: unknown) => {
  findings[k] = v;
};

/** Same text as fixtures/echo-mcp-server.mjs bigText(). */
function bigText(n: number, ch = 'x'): string {
  const head = '<<BEGIN>>';
  const tail = '<<END>>';
  if (n <= head.length + tail.length) return (head + tail).slice(0, n);
  return head + ch.repeat(n - head.length - tail.length) + tail;
}
/** Same text as fixtures/hook-context.mjs with HOOK_CONTEXT_CHARS=n. */
function ctxText(n: number): string {
  const head = '<<CTX-BEGIN>>';
  const tail = '<<CTX-END>>';
  return head + 'y'.repeat(Math.max(0, n - head.length - tail.length)) + tail;
}
const squash = (s: string) => s.replace(/([xy])\1{30,}/g, (m) => `[${m[0]}*${m.length}]`);

describe.skipIf(!enabled)('e2e client infrastructure self-check', () => {
  let server: ModelServer;
  beforeAll(async () => {
    const t0 = Date.now();
    const paths = await ensureClients();
    record('clients', { ...paths, ensureMs: Date.now() - t0 });
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
    const dir = join(REPO_ROOT, 'test-artifacts', 'e2e-clients');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'findings.json'), JSON.stringify(findings, null, 2));
  });
  const fresh = () => server.reset();

  // One client run checks several claims where they do not interfere: each claim reads its own
  // model request (the one right after its tool call).
  test("(a, c) claude -p: a Bash tool call runs and its tool_result reaches the model; a stdio MCP server's echo_big result reaches it whole", async () => {
    fresh();
    const sizes = [12_000, 40_000];
    server.setScript((req, ctx) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      if (ctx.mainIndex === 0) return { toolCalls: [shellCall(req, 'echo hi > file.txt')] };
      const n = sizes[ctx.mainIndex - 1];
      if (n === undefined) return { text: 'all done' };
      const tool = findTool(req, 'mcp__echo__echo_big');
      if (!tool) throw new Error('echo_big not offered');
      return { toolCalls: [{ name: tool.name, input: { n } }] };
    });
    const r = await runClaude({
      server,
      prompt: 'write the file, then call echo_big',
      mcpConfig: { mcpServers: { echo: { command: process.execPath, args: [MCP_SERVER] } } },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(server.scriptErrors).toEqual([]);
    const main = server.mainCalls();
    expect(main).toHaveLength(sizes.length + 2);
    // (a) The request after the Bash call carries its result.
    expect(readFileSync(join(r.home.cwd, 'file.txt'), 'utf8')).toBe('hi\n');
    const afterBash = main[1]!;
    expect(toolResults(afterBash)).toHaveLength(1);
    expect(lastToolResultText(afterBash)).toBe('(Bash completed with no output)');
    expect(r.result.result).toBe('all done');
    record('claude.exec', {
      durationMs: r.durationMs,
      requests: server.requests.map((q) => `${q.method} ${q.path}`),
      sideRequests: server.modelCalls().filter((q) => !isMainAgentRequest(q)).length,
      resultKeys: Object.keys(r.result),
      toolResult: toolResults(afterBash)[0]!.raw,
    });
    // (c) Each echo_big result, in the request right after its call.
    const out: Record<string, unknown> = {};
    sizes.forEach((n, i) => {
      const got = lastToolResultText(main[i + 2]!) ?? '';
      if (n === 12_000) expect(got).toBe(bigText(n));
      out[n] = { whole: got === bigText(n), length: got.length, head: squash(got.slice(0, 400)) };
    });
    record('claude.mcp', { ...out, durationMs: r.durationMs });
  });

  test("(b, c2) codex exec: an exec_command call runs and its function_call_output reaches the model; what of a stdio MCP server's result reaches it", async () => {
    fresh();
    const sizes = [8_000, 11_950, 12_000];
    server.setScript((req, ctx) => {
      if (ctx.mainIndex === 0) return { toolCalls: [shellCall(req, 'echo hi > file.txt')] };
      const n = sizes[ctx.mainIndex - 1];
      if (n === undefined) return { text: 'all done' };
      // A model calls only what it is offered; the call would reach Codex as "unsupported call".
      if (!findTool(req, 'mcp__echo__echo_big')) throw new Error('echo_big not offered');
      return { toolCalls: [{ name: 'mcp__echo__echo_big', input: { n } }] };
    });
    const r = await runCodex({
      server,
      prompt: 'write the file, then call echo_big',
      // Codex sends its first model request without waiting for MCP servers and offers a
      // server's tools only once it is up. A loaded machine started this one after the second
      // request (the model's call came back "unsupported call"); a server that starts 2 s late
      // stands in for that here. `required` makes Codex wait for it, as the Codex driver does.
      mcpServers: {
        echo: {
          command: process.execPath,
          args: [MCP_SERVER],
          env: { ECHO_START_DELAY_MS: '2000' },
          required: true,
          startup_timeout_sec: 120,
          tool_timeout_sec: 120,
        },
      },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(server.scriptErrors).toEqual([]);
    const main = server.mainCalls();
    expect(main).toHaveLength(sizes.length + 2);
    // (b) The request after the shell call carries its output.
    expect(readFileSync(join(r.home.cwd, 'file.txt'), 'utf8')).toBe('hi\n');
    const afterShell = main[1]!;
    expect(lastToolResultText(afterShell)).toContain('Process exited with code 0');
    expect(r.lastMessage?.trim()).toBe('all done');
    record('codex.exec', {
      durationMs: r.durationMs,
      requests: server.requests.map((q) => `${q.method} ${q.path}`),
      tools: findTool(afterShell, 'exec_command')?.raw,
      functionCallOutput: toolResults(afterShell)[0]!.raw,
      eventTypes: r.events.map((e) => e.type + (e.item ? `:${e.item.type}` : '')),
    });
    // (c2) Each echo_big result, in the request right after its call.
    const out: Record<string, unknown> = {};
    sizes.forEach((n, i) => {
      const res = toolResults(main[i + 2]!).at(-1)!;
      out[n] = {
        containsWhole: res.text.includes(bigText(n)),
        length: res.text.length,
        raw: squash(JSON.stringify(res.raw)),
      };
    });
    const first = out[8000] as { containsWhole: boolean; raw: string };
    expect(first.containsWhole, first.raw.slice(0, 400)).toBe(true);
    record('codex.mcp', out);
  });

  test('(b2) codex exec: a model error fails the run', async () => {
    fresh();
    server.setScript(() => ({ error: { status: 500, message: 'scripted failure' } }));
    const r = await runCodex({ server, prompt: 'fail please' });
    expect(r.code).not.toBe(0);
    record('codex.exec.error', {
      code: r.code,
      durationMs: r.durationMs,
      modelCalls: server.modelCalls().length,
      events: r.events.filter((e) => e.type !== 'item.completed' || e.item?.type === 'error').slice(-4),
    });
  });

  test('(d) claude UserPromptSubmit hook: where additionalContext lands, and the 10,000-char cap', async () => {
    const out: Record<string, unknown> = {};
    for (const n of [0, 10_000, 10_001]) {
      fresh();
      server.setScript(() => ({ text: 'ok' }));
      const log = join(REPO_ROOT, 'test-artifacts', `claude-hook-${n}.jsonl`);
      mkdirSync(join(REPO_ROOT, 'test-artifacts'), { recursive: true });
      rmSync(log, { force: true });
      const r = await runClaude({
        server,
        prompt: 'hello',
        settings: { hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: HOOK }] }] } },
        env: { HOOK_LOG: log, HOOK_CONTEXT: 'CTX-MARKER-123', HOOK_CONTEXT_CHARS: String(n) },
      });
      expect(r.code, r.stderr).toBe(0);
      const main = server.mainCalls()[0]!;
      const needle = n === 0 ? 'CTX-MARKER-123' : '<<CTX-BEGIN>>';
      const hits = findText(main, needle);
      expect(hits.length).toBe(1);
      const t = hits[0]!.text;
      const at = t.indexOf('UserPromptSubmit hook additional context: ');
      expect(at).toBeGreaterThanOrEqual(0);
      const seg = t.slice(at, t.indexOf('\n\nToday', at) >= 0 ? t.indexOf('\n\nToday', at) : undefined);
      if (n === 0) expect(seg).toBe('UserPromptSubmit hook additional context: CTX-MARKER-123');
      if (n === 10_000) expect(seg).toBe(`UserPromptSubmit hook additional context: ${ctxText(n)}`);
      if (n > 10_000) expect(seg).toContain('<persisted-output>');
      out[n] = {
        role: hits[0]!.role,
        segment: squash(seg),
        segmentLength: seg.length,
        hookInput: JSON.parse(readFileSync(log, 'utf8').trim().split('\n')[0]!),
      };
    }
    record('claude.hook.userPromptSubmit', out);
  });

  test('(e) codex hooks (SessionStart + UserPromptSubmit via hooks.json)', async () => {
    const out: Record<string, unknown> = {};
    // n = 16_001 runs with the hook's `additionalContextLimit: 0` (spilling disabled).
    for (const n of [0, 9_000, 10_000, 10_004, 20_000, 16_001]) {
      fresh();
      server.setScript(() => ({ text: 'ok' }));
      const log = join(REPO_ROOT, 'test-artifacts', `codex-hook-${n}.jsonl`);
      rmSync(log, { force: true });
      const limit = n === 16_001 ? { additionalContextLimit: 0 } : {};
      const r = await runCodex({
        server,
        prompt: 'hello',
        hooks: {
          SessionStart: [
            { matcher: 'startup|resume', hooks: [{ type: 'command', command: `${HOOK} SessionStart` }] },
          ],
          UserPromptSubmit: [{ hooks: [{ type: 'command', command: HOOK, ...limit }] }],
        },
        env: { HOOK_LOG: log, HOOK_CONTEXT: 'CTX-MARKER-123', HOOK_CONTEXT_CHARS: String(n) },
      });
      expect(r.code, r.stderr).toBe(0);
      const main = server.mainCalls()[0]!;
      const msgs = userContent(main).messages;
      const promptIdx = msgs.findIndex((m) => m.texts.includes('hello'));
      const needle = n === 0 ? 'CTX-MARKER-123' : '<<CTX-BEGIN>>';
      const hits = msgs.map((m, i) => ({ i, m })).filter(({ m }) => m.texts.some((t) => t.includes(needle)));
      expect(hits.length).toBe(2); // one per hook event
      const text = hits[1]!.m.texts.find((t) => t.includes(needle))!;
      if (n === 0) expect(text).toBe('CTX-MARKER-123');
      if (n === 9_000) expect(text).toBe(ctxText(n));
      if (n === 20_000) expect(text).toContain('Warning: truncated output');
      if (n === 16_001) expect(text).toBe(ctxText(n));
      out[n] = {
        sessionStartAt: hits[0]!.i - promptIdx,
        userPromptSubmitAt: hits[1]!.i - promptIdx,
        role: hits[1]!.m.role,
        whole: text === (n === 0 ? 'CTX-MARKER-123' : ctxText(n)),
        text: squash(text),
        hookInputs: readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l)),
      };
    }
    record('codex.hooks', out);
  });

  test('(f) codex app-server: thread/start + turn/start with text, localImage, additionalContext', async () => {
    fresh();
    server.setScript((req, ctx) =>
      ctx.mainIndex === 0
        ? { toolCalls: [shellCall(req, 'echo hi > app.txt')] }
        : { text: `done ${ctx.mainIndex}` },
    );
    const home = makeCodexHome({
      server,
      hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: HOOK }] }] },
    });
    const trusted = await trustCodexHooks(home);
    const app = await startCodexAppServer({ server, home, env: { HOOK_CONTEXT: 'APP-HOOK-CTX' } });
    try {
      const init = await app.initialize(true);
      const th = await app.request('thread/start', {
        cwd: home.cwd,
        approvalPolicy: 'never',
        sandbox: 'danger-full-access',
      });
      const threadId: string = th.thread.id;
      const t0 = Date.now();
      const started = await app.request('turn/start', {
        threadId,
        input: [
          { type: 'text', text: 'look at this', text_elements: [] },
          { type: 'localImage', path: PNG },
        ],
        additionalContext: {
          'sluice.delivery': { value: 'DELIVERY-CTX-XYZ', kind: 'application' },
          'sluice.untrusted': { value: 'UNTRUSTED-CTX', kind: 'untrusted', name: 'sluice_inbox' },
        },
      });
      const done = await app.waitNotification('turn/completed', (p) => p.turn.id === started.turn.id);
      const turnMs = Date.now() - t0;
      expect(done.turn.status).toBe('completed');
      expect(existsSync(join(home.cwd, 'app.txt'))).toBe(true);
      const first = server.mainCalls()[0]!;
      const uc = userContent(first);
      expect(uc.images).toHaveLength(1);
      expect(uc.images[0]!.type).toBe('input_image');
      expect(uc.images[0]!.mediaType).toBe('image/png');
      expect(uc.images[0]!.data).toBe(readFileSync(PNG).toString('base64'));
      expect(findText(first, 'DELIVERY-CTX-XYZ')).toEqual([
        { role: 'developer', text: '<sluice.delivery>DELIVERY-CTX-XYZ</sluice.delivery>' },
      ]);
      expect(findText(first, 'APP-HOOK-CTX')).toEqual([{ role: 'developer', text: 'APP-HOOK-CTX' }]);
      const untrusted = (first.body.input as any[]).find((it) =>
        JSON.stringify(it).includes('UNTRUSTED-CTX'),
      );

      // A failing turn: the model server answers 500.
      server.setScript(() => ({ error: { status: 500, message: 'scripted failure' } }));
      const t1 = Date.now();
      const s2 = await app.request('turn/start', {
        threadId,
        input: [{ type: 'text', text: 'fail', text_elements: [] }],
      });
      const failed = await app.waitNotification('turn/completed', (p) => p.turn.id === s2.turn.id);
      expect(failed.turn.status).toBe('failed');
      record('codex.appServer', {
        initializeResult: init,
        threadStartResultKeys: Object.keys(th),
        turnStartResult: started,
        turnCompleted: done,
        turnMs,
        failedTurn: failed,
        failedTurnMs: Date.now() - t1,
        errorNotifications: app
          .notifications()
          .filter((n) => n.method === 'error')
          .slice(-2),
        notificationSequence: app.lines.map((l) => l.method ?? `response#${l.id}`),
        userMessageInput: squash(
          JSON.stringify((first.body.input as any[]).filter((it) => it.role === 'user').at(-1)),
        ),
        untrustedContextItem: untrusted,
        trustedHooks: trusted,
      });
    } finally {
      await app.close();
    }
  });

  test('(g, g2) claude stream-json: image block reaches the model; result shapes for success and model error; CLAUDE_CODE_MAX_RETRIES=2 makes 3 attempts', async () => {
    fresh();
    let fail = false;
    server.setScript((_req, ctx) =>
      fail ? { error: { status: 529, message: 'Overloaded' } } : { text: `reply ${ctx.mainIndex}` },
    );
    const s = await startClaudeSession({ server, maxRetries: 2 });
    try {
      const png = readFileSync(PNG).toString('base64');
      const t0 = Date.now();
      s.sendUser([
        { type: 'text', text: 'see image' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
      ]);
      const ok = await s.nextResult(0);
      const firstTurnMs = Date.now() - t0;
      expect(ok.is_error).toBe(false);
      expect(ok.result).toBe('reply 0');
      const imgs = userContent(server.mainCalls()[0]!).images;
      expect(imgs).toHaveLength(1);
      expect(imgs[0]).toMatchObject({ type: 'image', mediaType: 'image/png', data: png });

      // (g2) A failing turn: the model server answers 529 every time, Claude tries 1 + 2 times.
      fail = true;
      const from = s.lines.length;
      const callsBefore = server.modelCalls().length;
      const t1 = Date.now();
      s.sendUser('second');
      const bad = await s.nextResult(from);
      const errorTurnMs = Date.now() - t1;
      expect(bad.is_error).toBe(true);
      expect(bad.api_error_status).toBe(529);
      const attempts = server.modelCalls().slice(callsBefore);
      expect(attempts).toHaveLength(3);
      record('claude.retries', {
        attemptsAtMs: attempts.map((q) => q.at - t1),
        retryCountHeaders: attempts.map((q) => q.headers['x-stainless-retry-count']),
        durationMs: errorTurnMs,
        result: bad.result,
      });

      fail = false;
      const from3 = s.lines.length;
      s.sendUser('third');
      const again = await s.nextResult(from3);
      expect(again.is_error).toBe(false);
      const drop = (r: any) => {
        const { usage, modelUsage, model_usage_since_last_result, subagent_stats, ...rest } = r;
        return rest;
      };
      record('claude.streamJson', {
        firstTurnMs,
        errorTurnMs,
        init: { ...s.lines[0], slash_commands: undefined, skills: undefined, tools: undefined },
        success: drop(ok),
        error: drop(bad),
        errorAssistantEvent: s.lines.slice(from).find((l) => l.type === 'assistant'),
        lineTypes: s.lines.map((l) => l.type + (l.subtype ? `:${l.subtype}` : '')),
      });
    } finally {
      await s.close();
    }
  });
});
