// A scripted model server on 127.0.0.1 that speaks just enough of the Anthropic Messages API
// (Claude Code) and the OpenAI Responses API (Codex) for the real clients to run offline.
// See docs/e2e-clients.md for the request/response shapes this was built against.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Api = 'anthropic' | 'openai';

/** What kind of call a request is. Only `messages` and `responses` are model calls (scripted). */
export type RequestKind = 'messages' | 'count_tokens' | 'responses' | 'models' | 'other';

export interface RecordedRequest {
  api: Api;
  kind: RequestKind;
  method: string;
  /** Path without the query string. */
  path: string;
  query: string;
  headers: Record<string, string>;
  /** Parsed JSON body (or the raw string if it did not parse, or null when empty). */
  body: any;
  /** Size of the request body in bytes (after content-encoding was undone). */
  bytes: number;
  /** Date.now() when the request was received. */
  at: number;
  /** 0-based index among model calls (`messages`/`responses`) since the last setScript/reset; -1 for other requests. */
  callIndex: number;
}

export interface ToolCall {
  name: string;
  input: unknown;
  /** Optional call id; generated when missing. */
  id?: string;
}

export type Reply =
  | { text: string; delayMs?: number }
  | { toolCalls: ToolCall[]; text?: string; delayMs?: number }
  | {
      error: { status: number; message: string; type?: string; headers?: Record<string, string> };
      delayMs?: number;
    };

export interface ScriptContext {
  /** 0-based index of this model call (since the last setScript/reset). */
  callIndex: number;
  /** 0-based index among main-agent calls (isMainAgentRequest) since the last setScript/reset, or -1 for a side request. */
  mainIndex: number;
  server: ModelServer;
}

export type ModelScript = (
  req: RecordedRequest,
  ctx: ScriptContext,
) => Reply | undefined | Promise<Reply | undefined>;

export interface ModelServer {
  url: string;
  port: number;
  /** Base URL for Claude Code: ANTHROPIC_BASE_URL (no /v1). */
  anthropicBaseUrl: string;
  /** Base URL for a Codex model provider: `base_url` (with /v1). */
  openaiBaseUrl: string;
  requests: RecordedRequest[];
  /** Model calls only (`messages` + `responses`). */
  modelCalls(): RecordedRequest[];
  /** Main-agent model calls only. */
  mainCalls(): RecordedRequest[];
  /** Errors thrown by the script (the client got a 500). */
  scriptErrors: unknown[];
  /** Replace the script; ctx.callIndex / ctx.mainIndex count from 0 again. */
  setScript(script: ModelScript): void;
  /** Forget recorded requests and script errors, restart the counters, optionally set a script. */
  reset(script?: ModelScript): void;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Request inspection helpers (work on both APIs)

export interface ToolDef {
  name: string;
  description?: string;
  schema?: unknown;
  raw: any;
}

/** Every tool definition the client offered the model. */
export function toolDefs(req: RecordedRequest): ToolDef[] {
  const tools: any[] = Array.isArray(req.body?.tools) ? req.body.tools : [];
  const out: ToolDef[] = [];
  for (const t of tools) {
    if (req.api === 'anthropic') {
      out.push({ name: t.name, description: t.description, schema: t.input_schema, raw: t });
    } else if (t.type === 'function' || t.type === 'custom') {
      out.push({ name: t.name, description: t.description, schema: t.parameters ?? t.format, raw: t });
    } else if (t.type === 'namespace' && Array.isArray(t.tools)) {
      // Grouped tools (Codex puts each MCP server in a namespace `mcp__<server>`): exposed here as
      // `mcp__<server>__<tool>`; the reply's function_call carries {namespace, name} separately.
      for (const inner of t.tools) {
        out.push({
          name: t.name.endsWith('__') ? `${t.name}${inner.name}` : `${t.name}__${inner.name}`,
          description: inner.description,
          schema: inner.parameters,
          raw: { ...inner, namespace: t.name },
        });
      }
    } else {
      out.push({ name: t.name ?? t.type, description: t.description, raw: t });
    }
  }
  return out;
}

export function toolNames(req: RecordedRequest): string[] {
  return toolDefs(req).map((t) => t.name);
}

/** Find a tool definition by exact name, or by a predicate / regex on the name. */
export function findTool(req: RecordedRequest, name: string | RegExp): ToolDef | undefined {
  return toolDefs(req).find((t) => (typeof name === 'string' ? t.name === name : name.test(t.name)));
}

/**
 * True for the main agent loop's model calls, false for side requests (title generation,
 * quota checks, topic detection, summaries). Main calls carry tool definitions; Claude Code's
 * side requests carry none. Codex only makes main calls in our runs.
 */
export function isMainAgentRequest(req: RecordedRequest): boolean {
  if (req.kind !== 'messages' && req.kind !== 'responses') return false;
  const tools = req.body?.tools;
  return Array.isArray(tools) && tools.length > 0;
}

function flattenText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((c: any) => {
      if (typeof c === 'string') return c;
      if (c && typeof c.text === 'string') return c.text;
      return '';
    })
    .join('');
}

/** Text of the most recent tool result sent to the model (tool_result / function_call_output). */
export function lastToolResultText(req: RecordedRequest): string | undefined {
  const all = toolResults(req);
  return all.length ? all[all.length - 1]!.text : undefined;
}

export interface ToolResult {
  callId: string;
  text: string;
  isError?: boolean;
  raw: any;
}

/** Every tool result in the request's history, oldest first. */
export function toolResults(req: RecordedRequest): ToolResult[] {
  const out: ToolResult[] = [];
  if (req.api === 'anthropic') {
    for (const m of req.body?.messages ?? []) {
      if (!Array.isArray(m.content)) continue;
      for (const b of m.content) {
        if (b?.type === 'tool_result') {
          out.push({ callId: b.tool_use_id, text: flattenText(b.content), isError: b.is_error, raw: b });
        }
      }
    }
  } else {
    for (const it of Array.isArray(req.body?.input) ? req.body.input : []) {
      if (it?.type === 'function_call_output' || it?.type === 'custom_tool_call_output') {
        const o = it.output;
        const text = typeof o === 'string' ? o : Array.isArray(o) ? flattenText(o) : flattenText(o?.content);
        out.push({ callId: it.call_id, text, raw: it });
      }
    }
  }
  return out;
}

export interface ImageRef {
  /** anthropic: `image` block; openai: `input_image` part */
  type: 'image' | 'input_image';
  mediaType?: string;
  /** base64 payload (anthropic base64 source, or decoded from an openai data: URL) */
  data?: string;
  url?: string;
  raw: any;
}

export interface UserContent {
  /** Every text block/part in user (and, for OpenAI, developer) messages, in order. */
  texts: string[];
  images: ImageRef[];
  /** Same, split per message: `{role, texts, images}` */
  messages: { role: string; texts: string[]; images: ImageRef[] }[];
}

function imageFromAnthropic(b: any): ImageRef {
  const src = b.source ?? {};
  return {
    type: 'image',
    mediaType: src.media_type,
    data: src.type === 'base64' ? src.data : undefined,
    url: src.type === 'url' ? src.url : undefined,
    raw: b,
  };
}

function imageFromOpenai(p: any): ImageRef {
  const url: string | undefined = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
  const m = url ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
  return { type: 'input_image', mediaType: m?.[1], data: m?.[2], url, raw: p };
}

/**
 * All user/developer-visible input text and image blocks of a model request.
 * Anthropic: `messages[role=user|system]` text and image blocks (also images nested in tool_result).
 * OpenAI: `input[type=message, role=user|developer]` input_text/input_image parts.
 */
export function userContent(req: RecordedRequest): UserContent {
  const messages: UserContent['messages'] = [];
  if (req.api === 'anthropic') {
    for (const m of req.body?.messages ?? []) {
      // Claude Code 2.1.33x also sends mid-conversation `role: "system"` messages (environment,
      // hook additionalContext); count them as context here.
      if (m.role !== 'user' && m.role !== 'system') continue;
      const entry = { role: m.role as string, texts: [] as string[], images: [] as ImageRef[] };
      if (typeof m.content === 'string') entry.texts.push(m.content);
      else
        for (const b of m.content ?? []) {
          if (b?.type === 'text') entry.texts.push(b.text);
          else if (b?.type === 'image') entry.images.push(imageFromAnthropic(b));
          else if (b?.type === 'tool_result' && Array.isArray(b.content)) {
            for (const c of b.content) if (c?.type === 'image') entry.images.push(imageFromAnthropic(c));
          }
        }
      messages.push(entry);
    }
  } else {
    for (const it of Array.isArray(req.body?.input) ? req.body.input : []) {
      if (it?.type !== 'message' || (it.role !== 'user' && it.role !== 'developer')) continue;
      const entry = { role: it.role as string, texts: [] as string[], images: [] as ImageRef[] };
      if (typeof it.content === 'string') entry.texts.push(it.content);
      else
        for (const p of it.content ?? []) {
          if (p?.type === 'input_text') entry.texts.push(p.text);
          else if (p?.type === 'input_image') entry.images.push(imageFromOpenai(p));
        }
      messages.push(entry);
    }
  }
  return {
    texts: messages.flatMap((m) => m.texts),
    images: messages.flatMap((m) => m.images),
    messages,
  };
}

/** Every context text (userContent) containing `needle`, with its message role. */
export function findText(req: RecordedRequest, needle: string): { role: string; text: string }[] {
  const out: { role: string; text: string }[] = [];
  for (const m of userContent(req).messages)
    for (const t of m.texts) if (t.includes(needle)) out.push({ role: m.role, text: t });
  return out;
}

/** System prompt text (anthropic `system`, openai `instructions`). */
export function systemText(req: RecordedRequest): string {
  if (req.api === 'anthropic') {
    const s = req.body?.system;
    return typeof s === 'string' ? s : flattenText(s);
  }
  return typeof req.body?.instructions === 'string' ? req.body.instructions : '';
}

/** Number of assistant tool calls already in the history (handy for "step" scripts). */
export function priorToolCallCount(req: RecordedRequest): number {
  if (req.api === 'anthropic') {
    let n = 0;
    for (const m of req.body?.messages ?? [])
      if (m.role === 'assistant' && Array.isArray(m.content))
        n += m.content.filter((b: any) => b?.type === 'tool_use').length;
    return n;
  }
  return (Array.isArray(req.body?.input) ? req.body.input : []).filter(
    (it: any) => it?.type === 'function_call' || it?.type === 'custom_tool_call',
  ).length;
}

/**
 * A tool call that runs `command` through whatever shell tool the client offered:
 * Claude Code `Bash {command}`; Codex `exec_command {cmd}` (0.171 default), `shell_command
 * {command}`, or legacy `shell {command: [bash,-lc,cmd]}`.
 */
export function shellCall(req: RecordedRequest, command: string): ToolCall {
  if (req.api === 'anthropic') return { name: 'Bash', input: { command, description: 'run command' } };
  if (findTool(req, 'exec_command')) return { name: 'exec_command', input: { cmd: command } };
  if (findTool(req, 'shell_command')) return { name: 'shell_command', input: { command } };
  if (findTool(req, 'shell')) return { name: 'shell', input: { command: ['bash', '-lc', command] } };
  throw new Error(`no shell tool offered; tools: ${toolNames(req).join(', ')}`);
}

// ---------------------------------------------------------------------------------------------
// Server

function classify(
  method: string,
  path: string,
  headers: IncomingMessage['headers'],
): { api: Api; kind: RequestKind } {
  if (path.endsWith('/messages/count_tokens')) return { api: 'anthropic', kind: 'count_tokens' };
  if (path.endsWith('/messages')) return { api: 'anthropic', kind: 'messages' };
  if (path.endsWith('/responses')) return { api: 'openai', kind: 'responses' };
  const anthropic = headers['anthropic-version'] !== undefined || headers['x-api-key'] !== undefined;
  const api: Api = anthropic ? 'anthropic' : 'openai';
  if (method === 'GET' && /\/models\/?$/.test(path)) return { api, kind: 'models' };
  return { api, kind: 'other' };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  let buf = Buffer.concat(chunks);
  const enc = String(req.headers['content-encoding'] ?? '').toLowerCase();
  if (enc) {
    const zlib = await import('node:zlib');
    if (enc === 'zstd') {
      const z = zlib as any;
      if (typeof z.zstdDecompressSync !== 'function')
        throw new Error('zstd request body but node lacks zstd');
      buf = z.zstdDecompressSync(buf);
    } else if (enc === 'gzip') buf = zlib.gunzipSync(buf);
    else if (enc === 'br') buf = zlib.brotliDecompressSync(buf);
    else if (enc === 'deflate') buf = zlib.inflateSync(buf);
  }
  return buf;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function approxTokens(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 4));
}

function sse(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function normalizeReply(r: Reply | undefined): Reply {
  return r ?? { text: 'ok' };
}

function sendAnthropic(res: ServerResponse, req: RecordedRequest, reply: Reply): void {
  const model = req.body?.model ?? 'claude-test';
  const stream = req.body?.stream === true;
  if ('error' in reply) {
    const { status, message, type, headers } = reply.error;
    res.writeHead(status, {
      'content-type': 'application/json',
      'request-id': `req_${randomUUID()}`,
      ...headers,
    });
    res.end(
      JSON.stringify({
        type: 'error',
        error: { type: type ?? (status === 529 ? 'overloaded_error' : 'api_error'), message },
      }),
    );
    return;
  }
  const blocks: any[] = [];
  const text = 'toolCalls' in reply ? reply.text : reply.text;
  if (text) blocks.push({ type: 'text', text });
  if ('toolCalls' in reply)
    for (const c of reply.toolCalls)
      blocks.push({
        type: 'tool_use',
        id: c.id ?? `toolu_${randomUUID().replace(/-/g, '')}`,
        name: c.name,
        input: c.input,
      });
  const stopReason = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
  const inputTokens = approxTokens(req.bytes);
  const outputTokens = approxTokens(JSON.stringify(blocks).length);
  const id = `msg_${randomUUID().replace(/-/g, '')}`;
  const usage = {
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${id}` });
    res.end(
      JSON.stringify({
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: blocks,
        stop_reason: stopReason,
        stop_sequence: null,
        usage,
      }),
    );
    return;
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'request-id': `req_${id}`,
  });
  sse(res, 'message_start', {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      sse(res, 'content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'text', text: '' },
      });
      sse(res, 'content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'text_delta', text: b.text },
      });
    } else {
      sse(res, 'content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} },
      });
      sse(res, 'content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) },
      });
    }
    sse(res, 'content_block_stop', { type: 'content_block_stop', index });
  });
  sse(res, 'message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: outputTokens },
  });
  sse(res, 'message_stop', { type: 'message_stop' });
  res.end();
}

function sendOpenai(res: ServerResponse, req: RecordedRequest, reply: Reply): void {
  const model = req.body?.model ?? 'gpt-test';
  if ('error' in reply) {
    const { status, message, type, headers } = reply.error;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ error: { message, type: type ?? 'server_error', code: null, param: null } }));
    return;
  }
  const respId = `resp_${randomUUID().replace(/-/g, '')}`;
  const items: any[] = [];
  const text = reply.text;
  if (text)
    items.push({
      type: 'message',
      id: `msg_${randomUUID().replace(/-/g, '')}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text, annotations: [] }],
    });
  if ('toolCalls' in reply)
    for (const c of reply.toolCalls) {
      const callId = c.id ?? `call_${randomUUID().replace(/-/g, '')}`;
      const def = findTool(req, c.name);
      if (def?.raw?.type === 'custom') {
        items.push({
          type: 'custom_tool_call',
          id: `ctc_${randomUUID().replace(/-/g, '')}`,
          status: 'completed',
          call_id: callId,
          name: c.name,
          input: typeof c.input === 'string' ? c.input : JSON.stringify(c.input),
        });
      } else {
        const ns: string | undefined = def?.raw?.namespace;
        items.push({
          type: 'function_call',
          id: `fc_${randomUUID().replace(/-/g, '')}`,
          status: 'completed',
          call_id: callId,
          name: ns ? def!.raw.name : c.name,
          ...(ns ? { namespace: ns } : {}),
          arguments: typeof c.input === 'string' ? c.input : JSON.stringify(c.input),
        });
      }
    }
  const inputTokens = approxTokens(req.bytes);
  const outputTokens = approxTokens(JSON.stringify(items).length);
  const base = { id: respId, object: 'response', created_at: Math.floor(Date.now() / 1000), model };
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  const ev = (type: string, data: Record<string, unknown>) =>
    sse(res, type, { type, sequence_number: seq++, ...data });
  ev('response.created', { response: { ...base, status: 'in_progress', output: [] } });
  ev('response.in_progress', { response: { ...base, status: 'in_progress', output: [] } });
  items.forEach((item, outputIndex) => {
    const added =
      item.type === 'message'
        ? { ...item, status: 'in_progress', content: [] }
        : item.type === 'function_call'
          ? { ...item, status: 'in_progress', arguments: '' }
          : { ...item, status: 'in_progress', input: '' };
    ev('response.output_item.added', { output_index: outputIndex, item: added });
    if (item.type === 'message') {
      const part = item.content[0];
      ev('response.content_part.added', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      ev('response.output_text.delta', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        delta: part.text,
      });
      ev('response.output_text.done', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        text: part.text,
      });
      ev('response.content_part.done', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        part,
      });
    } else if (item.type === 'function_call') {
      ev('response.function_call_arguments.delta', {
        item_id: item.id,
        output_index: outputIndex,
        delta: item.arguments,
      });
      ev('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: outputIndex,
        arguments: item.arguments,
      });
    }
    ev('response.output_item.done', { output_index: outputIndex, item });
  });
  ev('response.completed', {
    response: {
      ...base,
      status: 'completed',
      output: items,
      usage: {
        input_tokens: inputTokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: outputTokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: inputTokens + outputTokens,
      },
    },
  });
  res.end();
}

export async function startModelServer(script: ModelScript = () => ({ text: 'ok' })): Promise<ModelServer> {
  let current = script;
  let callCount = 0;
  let mainCount = 0;
  const sockets = new Set<Socket>();
  const requests: RecordedRequest[] = [];
  const scriptErrors: unknown[] = [];
  const self: ModelServer = {
    url: '',
    port: 0,
    anthropicBaseUrl: '',
    openaiBaseUrl: '',
    requests,
    scriptErrors,
    modelCalls: () => requests.filter((r) => r.kind === 'messages' || r.kind === 'responses'),
    mainCalls: () => requests.filter(isMainAgentRequest),
    setScript: (s) => {
      current = s;
      callCount = 0;
      mainCount = 0;
    },
    reset: (s) => {
      requests.length = 0;
      scriptErrors.length = 0;
      callCount = 0;
      mainCount = 0;
      if (s) current = s;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };

  const server = createServer(async (req, res) => {
    const at = Date.now();
    const [path = '/', query = ''] = (req.url ?? '/').split('?');
    const method = req.method ?? 'GET';
    let raw: Buffer;
    try {
      raw = await readBody(req);
    } catch (e) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(e) } }));
      return;
    }
    const text = raw.toString('utf8');
    let body: any = null;
    if (text.length) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const { api, kind } = classify(method, path, req.headers);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      headers[k] = Array.isArray(v) ? v.join(', ') : String(v ?? '');
    const isModelCall = method === 'POST' && (kind === 'messages' || kind === 'responses');
    const rec: RecordedRequest = {
      api,
      kind,
      method,
      path,
      query,
      headers,
      body,
      bytes: raw.length,
      at,
      callIndex: isModelCall ? callCount++ : -1,
    };
    requests.push(rec);

    try {
      if (isModelCall) {
        const mainIndex = isMainAgentRequest(rec) ? mainCount++ : -1;
        let reply: Reply;
        try {
          reply = normalizeReply(await current(rec, { callIndex: rec.callIndex, mainIndex, server: self }));
        } catch (e) {
          scriptErrors.push(e);
          reply = { error: { status: 500, message: `script error: ${String(e)}` } };
        }
        if (reply.delayMs) await sleep(reply.delayMs);
        if (api === 'anthropic') sendAnthropic(res, rec, reply);
        else sendOpenai(res, rec, reply);
        return;
      }
      if (kind === 'count_tokens') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: approxTokens(rec.bytes) }));
        return;
      }
      if (kind === 'models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        if (api === 'anthropic')
          res.end(
            JSON.stringify({
              data: [
                {
                  type: 'model',
                  id: 'claude-sonnet-4-5',
                  display_name: 'Test',
                  created_at: '2025-01-01T00:00:00Z',
                },
              ],
              has_more: false,
              first_id: 'claude-sonnet-4-5',
              last_id: 'claude-sonnet-4-5',
            }),
          );
        else res.end(JSON.stringify({ object: 'list', data: [], models: [] }));
        return;
      }
      // Anything else (HEAD /, telemetry, oauth probes…): harmless empty success.
      res.writeHead(method === 'HEAD' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(
        method === 'HEAD'
          ? undefined
          : JSON.stringify({ error: { type: 'not_found_error', message: 'not scripted' } }),
      );
    } catch (e) {
      scriptErrors.push(e);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  self.port = port;
  self.url = `http://127.0.0.1:${port}`;
  self.anthropicBaseUrl = self.url;
  self.openaiBaseUrl = `${self.url}/v1`;
  return self;
}
